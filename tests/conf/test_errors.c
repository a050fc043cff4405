/*
 * tests/conf/test_errors.c — the configuration error table: each bad input
 * and the exact `file:line:col: message` text syncgate prints for it.
 */
#include "conf/conf.h"
#include "tests/conf/errors_text.h"

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdlib.h>
#include <string.h>

/* Every row loads "t.yaml" from `yaml` and must fail with exactly `want`. */
static const struct error_case {
	const char *name;
	const char *yaml;
	const char *want;
} error_cases[] = {
	{ "unknown top-level key",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nfoo: 1\n",
	  "t.yaml:5:1: unknown key 'foo'\n" },
	{ "unknown nested key",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\ngate:\n  max_hold: 5\n",
	  "t.yaml:6:3: unknown key 'gate.max_hold'\n" },
	{ "unknown key close to a known one",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  borker: 127.0.0.1:9092\n",
	  "t.yaml:4:3: unknown key 'upstream.borker' (did you mean 'upstream.broker'?)\n"
	  "t.yaml:4:3: missing required key 'upstream.broker'\n" },
	{ "unknown key within 2 edits of a section",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\ngat:\n  max_hold_m: 5\n",
	  "t.yaml:5:1: unknown key 'gat' (did you mean 'gate'?)\n" },
	{ "unknown mirror key close to a known one",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nmirrors:\n  - name: a\n    bootstrap: b:9092\n    sync_topcis: [x]\n",
	  "t.yaml:8:5: unknown key 'mirrors[0].sync_topcis' (did you mean 'mirrors[0].sync_topics'?)\n" },
	{ "unknown key at 2 edits of a short one: no hint",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nlog:\n  lvl: debug\n",
	  "t.yaml:6:3: unknown key 'log.lvl'\n" },
	{ "unknown mirror key",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nmirrors:\n  - name: a\n    bootstrap: b:9092\n    colour: red\n",
	  "t.yaml:8:5: unknown key 'mirrors[0].colour'\n" },
	{ "integer expected",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\ngate:\n  max_hold_ms: abc\n",
	  "t.yaml:6:16: gate.max_hold_ms: expected an integer, got 'abc'\n" },
	{ "quoted integer",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\ngate:\n  max_hold_ms: \"5000\"\n",
	  "t.yaml:6:16: gate.max_hold_ms: expected an integer, got a quoted string\n" },
	{ "integer below range",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\ngate:\n  max_hold_ms: 0\n",
	  "t.yaml:6:16: gate.max_hold_ms: 0 is out of range (1..3600000)\n" },
	{ "integer above range",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\n  connect_timeout_ms: 600001\n",
	  "t.yaml:5:23: upstream.connect_timeout_ms: 600001 is out of range (1..600000)\n" },
	{ "int64 overflow",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nlimits:\n  max_held_bytes: 99999999999999999999\n",
	  "t.yaml:6:19: limits.max_held_bytes: expected an integer, got '99999999999999999999'\n" },
	{ "int16 range",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\ngate:\n  error_codes:\n    mirror_sync_replication_timeout: 40000\n",
	  "t.yaml:7:38: gate.error_codes.mirror_sync_replication_timeout: 40000 is out of range (1..32767)\n" },
	{ "bad mode",
	  "mode: proxy\nlisten:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\n",
	  "t.yaml:1:7: mode: unknown value 'proxy' (expected sidecar or gateway)\n" },
	{ "bad log level",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nlog:\n  level: verbose\n",
	  "t.yaml:6:10: log.level: unknown value 'verbose' (expected error, warn, info or debug)\n" },
	{ "bad offsets",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nmirrors:\n  - name: a\n    bootstrap: b:9092\n    offsets: mm3\n",
	  "t.yaml:8:14: mirrors[0].offsets: unknown value 'mm3' (expected preserved or mm2)\n" },
	{ "bad progress",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nmirrors:\n  - name: a\n    bootstrap: b:9092\n    progress: push\n",
	  "t.yaml:8:15: mirrors[0].progress: unknown value 'push' (expected poll or tail)\n" },
	{ "bad acks1",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\ngate:\n  acks1: all\n",
	  "t.yaml:6:10: gate.acks1: unknown value 'all' (expected pass or gate)\n" },
	{ "bad v14",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\ngate:\n  advertise_produce_v14: always\n",
	  "t.yaml:6:26: gate.advertise_produce_v14: unknown value 'always' (expected auto or never)\n" },
	{ "bad bool",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\n  tls:\n    verify_hostname: yes\n",
	  "t.yaml:6:22: upstream.tls.verify_hostname: expected true or false, got 'yes'\n" },
	{ "missing listen.kafka",
	  "listen: {}\nupstream:\n  broker: 127.0.0.1:9092\n",
	  "t.yaml:1:9: missing required key 'listen.kafka'\n" },
	{ "missing listen section",
	  "upstream:\n  broker: 127.0.0.1:9092\n",
	  "t.yaml:1:1: missing required key 'listen.kafka'\n" },
	{ "missing upstream.broker",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  connect_timeout_ms: 100\n",
	  "t.yaml:4:3: missing required key 'upstream.broker'\n" },
	{ "mirror without name and bootstrap",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nmirrors:\n  - offsets: mm2\n",
	  "t.yaml:6:5: missing required key 'mirrors[0].name'\nt.yaml:6:5: missing required key 'mirrors[0].bootstrap'\n" },
	{ "duplicate mirror name",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nmirrors:\n  - name: a\n    bootstrap: b:9092\n  - name: a\n    bootstrap: c:9092\n",
	  "t.yaml:8:11: mirrors[1].name: duplicate mirror name 'a' (first at line 6)\n" },
	{ "duplicate key",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nlog:\n  level: info\n  level: debug\n",
	  "t.yaml:7:3: duplicate key 'log.level'\n" },
	{ "address without port",
	  "listen:\n  kafka: 0.0.0.0\nupstream:\n  broker: 127.0.0.1:9092\n",
	  "t.yaml:2:10: listen.kafka: invalid address '0.0.0.0': missing port (expected host:port)\n" },
	{ "unbracketed ipv6",
	  "listen:\n  kafka: ::1:9092\nupstream:\n  broker: 127.0.0.1:9092\n",
	  "t.yaml:2:10: listen.kafka: invalid address '::1:9092': an IPv6 address must be in brackets ([addr]:port)\n" },
	{ "port out of range",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: h:65536\n",
	  "t.yaml:4:11: upstream.broker: invalid address 'h:65536': port out of range (1..65535)\n" },
	{ "port zero upstream",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: h:0\n",
	  "t.yaml:4:11: upstream.broker: invalid address 'h:0': port out of range (1..65535)\n" },
	{ "bad regex",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nmirrors:\n  - name: a\n    bootstrap: b:9092\n    sync_topics: [\"orders.*\", \"(pay\"]\n",
	  "t.yaml:8:31: mirrors[0].sync_topics[1]: invalid regular expression '(pay': Unmatched ( or \\(\n" },
	{ "sync_topics not a list",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nmirrors:\n  - name: a\n    bootstrap: b:9092\n    sync_topics: orders\n",
	  "t.yaml:8:18: mirrors[0].sync_topics: expected a list of regular expressions, got 'orders'\n" },
	{ "property value a mapping",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nmirrors:\n  - name: a\n    bootstrap: b:9092\n    properties:\n      acks: {a: 1}\n",
	  "t.yaml:9:13: mirrors[0].properties.acks: expected a string, number or boolean, got a mapping\n" },
	{ "bootstrap.servers property",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nmirrors:\n  - name: a\n    bootstrap: b:9092\n    properties:\n      bootstrap.servers: x:1\n",
	  "t.yaml:9:7: mirrors[0].properties: 'bootstrap.servers' is set by the mirror's 'bootstrap' key\n" },
	{ "duplicate property",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nmirrors:\n  - name: a\n    bootstrap: b:9092\n    properties:\n      acks: all\n      acks: 1\n",
	  "t.yaml:10:7: mirrors[0].properties: duplicate property 'acks'\n" },
	{ "unset env secret",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nmirrors:\n  - name: a\n    bootstrap: b:9092\n    properties:\n      sasl.password: ${env:SG_TEST_UNSET_VAR}\n",
	  "t.yaml:9:22: mirrors[0].properties.sasl.password: environment variable 'SG_TEST_UNSET_VAR' is not set\n" },
	{ "missing secret file",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nmirrors:\n  - name: a\n    bootstrap: b:9092\n    properties:\n      sasl.password: ${file:/nonexistent/sg.secret}\n",
	  "t.yaml:9:22: mirrors[0].properties.sasl.password: cannot read secret file '/nonexistent/sg.secret': No such file or directory\n" },
	{ "unknown secret source",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nmirrors:\n  - name: a\n    bootstrap: b:9092\n    properties:\n      sasl.password: ${vault:kv/x}\n",
	  "t.yaml:9:22: mirrors[0].properties.sasl.password: unknown reference '${vault:kv/x}' (expected ${file:PATH} or ${env:NAME})\n" },
	{ "secret outside properties",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nmirrors:\n  - name: a\n    bootstrap: b:9092\nstate:\n  topic: ${env:HOME}\n",
	  "t.yaml:9:10: state.topic: ${...} references are only resolved in mirrors[].properties and source.properties\n" },
	{ "bad node id",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nadvertise:\n  nodes: {x: \"h:1\"}\n",
	  "t.yaml:6:11: advertise.nodes: expected a node id (0..2147483647), got 'x'\n" },
	{ "bad node address",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nadvertise:\n  nodes: {1: \"h\"}\n",
	  "t.yaml:6:14: advertise.nodes.1: invalid address 'h': missing port (expected host:port)\n" },
	{ "unknown template placeholder",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nadvertise:\n  template: \"{hostname}:19092\"\n",
	  "t.yaml:6:13: advertise.template: unknown placeholder '{hostname}'\n" },
	{ "template without port",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nadvertise:\n  template: \"{host}\"\n",
	  "t.yaml:6:13: advertise.template: does not render to host:port (missing port (expected host:port))\n" },
	{ "topic_name without {topic}",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nmirrors:\n  - name: a\n    bootstrap: b:9092\n    topic_name: fixed\n",
	  "t.yaml:8:17: mirrors[0].topic_name: must contain {topic} (each source topic needs its own destination topic)\n" },
	{ "bad state topic",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nstate:\n  topic: my topic\n",
	  "t.yaml:6:10: state.topic: invalid character ' ' in topic name (allowed: letters, digits, '.', '_', '-')\n" },
	{ "bad mirror name",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nmirrors:\n  - name: dr east\n    bootstrap: b:9092\n",
	  "t.yaml:6:11: mirrors[0].name: invalid character ' ' in mirror name (allowed: letters, digits, '.', '_', '-')\n" },
	{ "empty bootstrap entry",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nmirrors:\n  - name: a\n    bootstrap: b:9092,,c:9092\n",
	  "t.yaml:7:16: mirrors[0].bootstrap: empty entry in bootstrap list\n" },
	{ "gateway without base_port",
	  "mode: gateway\nlisten:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\n",
	  "t.yaml:1:7: mode: gateway mode needs advertise.base_port\n" },
	{ "base_port in sidecar mode",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nadvertise:\n  base_port: 20000\n",
	  "t.yaml:6:14: advertise.base_port: only used in gateway mode\n" },
	{ "per-connection above total",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nlimits:\n  max_held_bytes_per_connection: 2048\n  max_held_bytes: 1024\n",
	  "t.yaml:6:34: limits.max_held_bytes_per_connection (2048) is larger than limits.max_held_bytes (1024)\n" },
	{ "equal error codes",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\ngate:\n  error_codes:\n    mirror_sync_replication_timeout: 191\n",
	  "t.yaml:7:38: gate.error_codes: the two codes must differ (both are 191)\n" },
	{ "upstream is the listener itself",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:19092\nadmin:\n  listen: 127.0.0.1:19092\n",
	  "t.yaml:4:11: upstream.broker: 127.0.0.1:19092 is listen.kafka itself (syncgate would connect to itself)\n"
	  "t.yaml:6:11: admin.listen: 127.0.0.1:19092 is also listen.kafka\n" },
	{ "upstream cert without key",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\n  tls:\n    cert: /dev/null\n",
	  "t.yaml:6:5: upstream.tls: cert and key must be set together\n" },
	{ "listen tls without cert and key",
	  "listen:\n  kafka: 0.0.0.0:19092\n  tls: {}\nupstream:\n  broker: 127.0.0.1:9092\n",
	  "t.yaml:3:8: missing required key 'listen.tls.cert'\nt.yaml:3:8: missing required key 'listen.tls.key'\n" },
	{ "unreadable tls file",
	  "listen:\n  kafka: 0.0.0.0:19092\n  tls:\n    cert: /nonexistent/c.pem\n    key: /dev/null\nupstream:\n  broker: 127.0.0.1:9092\n",
	  "t.yaml:4:11: listen.tls.cert: cannot read '/nonexistent/c.pem': No such file or directory\n" },
	{ "mapping where address expected",
	  "listen:\n  kafka: {host: a}\nupstream:\n  broker: 127.0.0.1:9092\n",
	  "t.yaml:2:10: listen.kafka: expected a host:port, got a mapping\n" },
	{ "scalar where section expected",
	  "listen: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\n",
	  "t.yaml:1:9: listen: expected a mapping, got '0.0.0.0:19092'\n" },
	{ "empty value",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\ngate:\n  max_hold_ms:\n",
	  "t.yaml:6:15: gate.max_hold_ms: expected an integer, got an empty value\n" },
	{ "top level list",
	  "- a\n- b\n",
	  "t.yaml:1:1: expected a mapping of settings at the top level, got a list\n" },
	{ "mirrors not a list",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nmirrors:\n  name: a\n",
	  "t.yaml:6:3: mirrors: expected a list of mirrors, got a mapping\n" },
	{ "mirror item not a mapping",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\nmirrors:\n  - a\n",
	  "t.yaml:6:5: mirrors[0]: expected a mapping, got 'a'\n" },
	{ "syntax error",
	  "listen:\n  kafka: a: b\n",
	  "t.yaml:2:11: YAML syntax error: mapping values are not allowed in this context\n" },
	{ "tab indentation",
	  "listen:\n\tkafka: a:1\n",
	  "t.yaml:2:1: YAML syntax error: found character that cannot start any token (while scanning for the next token at line 2, column 1)\n" },
	{ "second document",
	  "listen:\n  kafka: 0.0.0.0:19092\nupstream:\n  broker: 127.0.0.1:9092\n---\nmode: gateway\n",
	  "t.yaml:6:1: only one YAML document is allowed\n" },
	{ "empty document",
	  "",
	  "t.yaml:1:1: missing required key 'listen.kafka'\nt.yaml:1:1: missing required key 'upstream.broker'\n" },
};

Test(conf, error_table)
{
	setenv("HOME", "/root", 0);
	unsetenv("SG_TEST_UNSET_VAR");
	size_t failed = 0;
	for (size_t i = 0; i < sizeof(error_cases) / sizeof(error_cases[0]); i++) {
		const struct error_case *tc = &error_cases[i];
		struct conf_errors e = { 0 };
		struct conf *c = conf_load_string("t.yaml", tc->yaml, strlen(tc->yaml), &e);
		char *got = errors_text(&e);
		if (c || strcmp(got, tc->want) != 0) {
			cr_log_error("case '%s':\n  want: %s  got:  %s", tc->name, tc->want, c ? "(loaded)\n" : got);
			failed++;
		}
		free(got);
		conf_free(c);
		conf_errors_free(&e);
	}
	cr_assert(eq(i64, (int64_t)(failed), (int64_t)(0)), "%zu of %zu error cases differ", failed,
		     sizeof(error_cases) / sizeof(error_cases[0]));
}

Test(conf, all_errors_reported_at_once)
{
	const char *yaml =
		"mode: proxy\n"                      /* 1: bad enum */
		"listen:\n"
		"  kafka: 0.0.0.0\n"                 /* 3: no port */
		"upstream:\n"
		"  broker: 127.0.0.1:9092\n"
		"  connect_timeout_ms: -1\n"         /* 6: out of range */
		"gate:\n"
		"  max_hold_ms: soon\n"              /* 8: not an integer */
		"  colour: red\n"                    /* 9: unknown key */
		"mirrors:\n"
		"  - name: a\n"
		"    bootstrap: b:9092\n"
		"    sync_topics: [\"a[\"]\n"        /* 13: bad regex */
		"  - name: a\n"                      /* 14: duplicate name */
		"    bootstrap: c:9092\n"
		"log:\n"
		"  level: loud\n";                   /* 17: bad enum */
	struct conf_errors e = { 0 };
	struct conf *c = conf_load_string("all.yaml", yaml, strlen(yaml), &e);
	cr_assert_null(c);
	const int lines[] = { 1, 3, 6, 8, 9, 13, 14, 17 };
	const size_t nl = sizeof(lines) / sizeof(lines[0]);
	cr_assert(eq(i64, (int64_t)(e.n), (int64_t)(nl)), "want %zu errors, got %zu", nl, e.n);
	for (size_t i = 0; i < nl; i++)
		cr_expect(eq(i64, (int64_t)(e.v[i].line), (int64_t)(lines[i])), "error %zu on line %d, want %d", i, e.v[i].line, lines[i]);
	conf_errors_free(&e);
}

Test(conf, missing_file_is_an_error)
{
	struct conf_errors e = { 0 };
	struct conf *c = conf_load("/nonexistent/syncgate.yaml", &e);
	cr_assert_null(c);
	char *got = errors_text(&e);
	cr_assert_str_eq(got, "/nonexistent/syncgate.yaml: cannot read configuration: No such file or directory\n");
	free(got);
	conf_errors_free(&e);
}

Test(conf, null_errs_is_allowed)
{
	struct conf *c = conf_load_string("t.yaml", "mode: x\n", 8, NULL);
	cr_assert_null(c);
}

static char format_args_out[8];

static void format_args_set(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void format_args_set(const char *fmt, ...)
{
	CONF_FORMAT_ARGS(format_args_out, fmt);
}

Test(conf, format_args_fills_the_array_and_cuts_to_fit)
{
	format_args_set("%s=%d", "a", 42);
	cr_expect_str_eq(format_args_out, "a=42");
	format_args_set("%s", "0123456789");
	cr_expect_str_eq(format_args_out, "0123456", "cut to sizeof - 1, NUL-terminated");
}
