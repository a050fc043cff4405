/*
 * tests/conf/test_load.c — loading good files: the shipped example, defaults,
 * secrets, host:port forms, sync topic matching, the reload check.
 */
#include "conf/conf.h"
#include "tests/conf/errors_text.h"

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef SOURCE_ROOT
#error "SOURCE_ROOT must be defined by the build"
#endif

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f, "cannot open %s", path);
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);
	char tmp[4096];
	size_t r;
	while ((r = fread(tmp, 1, sizeof(tmp), f)) > 0)
		fwrite(tmp, 1, r, m);
	fclose(m);
	fclose(f);
	return buf;
}

static void write_file(const char *dir, const char *name, const char *content)
{
	char path[512];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(content, f);
	fclose(f);
}

/* Replace every "@DIR@" in `in` with `dir`. */
static char *subst_dir(const char *in, const char *dir)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&buf, &n);
	for (const char *p = in; *p;) {
		if (strncmp(p, "@DIR@", 5) == 0) {
			fputs(dir, m);
			p += 5;
		} else {
			fputc(*p++, m);
		}
	}
	fclose(m);
	return buf;
}

/* Mirror `name` of `c`, or NULL. */
static const struct conf_mirror *mirror_named(const struct conf *c, const char *name)
{
	for (size_t i = 0; i < c->nmirrors; i++)
		if (!strcmp(c->mirrors[i].name, name))
			return &c->mirrors[i];
	return NULL;
}

static struct conf *load_ok(const char *yaml)
{
	struct conf_errors e = { 0 };
	struct conf *c = conf_load_string("t.yaml", yaml, strlen(yaml), &e);
	char *text = errors_text(&e);
	cr_assert_not_null(c, "load failed:\n%s", text);
	cr_assert(eq(i64, (int64_t)(e.n), (int64_t)(0)));
	free(text);
	conf_errors_free(&e);
	return c;
}

static const char minimal[] =
	"listen:\n  kafka: 0.0.0.0:19092\n"
	"upstream:\n  broker: 127.0.0.1:9092\n"
	"mirrors:\n  - name: dr-east\n    bootstrap: b:9092\n";

Test(conf, example_file_loads)
{
	char dir[] = "/tmp/sgconf-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	const char *files[] = { "server.crt", "server.key", "clients-ca.crt", "ca.crt", "admin.token" };
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++)
		write_file(dir, files[i], "pem\n");
	write_file(dir, "dr-east.password", "s3cret-pw\n");
	char *tmpl = slurp(SOURCE_ROOT "/tests/conf/syncgate.yaml");
	char *yaml = subst_dir(tmpl, dir);
	write_file(dir, "syncgate.yaml", yaml);
	char path[512];
	snprintf(path, sizeof(path), "%s/syncgate.yaml", dir);

	struct conf_errors e = { 0 };
	struct conf *c = conf_load(path, &e);
	char *text = errors_text(&e);
	cr_assert_not_null(c, "example did not load:\n%s", text);
	free(text);

	cr_expect_str_eq(c->path, path);
	cr_expect(eq(i64, (int64_t)(c->mode), (int64_t)(CONF_MODE_SIDECAR)));
	cr_expect_str_eq(c->listen_kafka.host, "0.0.0.0");
	cr_expect(eq(i64, (int64_t)(c->listen_kafka.port), (int64_t)(19092)));
	cr_expect(c->listen_tls.enabled);
	cr_expect(strstr(c->listen_tls.cert, "/server.crt") != NULL);
	cr_expect(strstr(c->listen_tls.client_ca, "/clients-ca.crt") != NULL);
	cr_expect_str_eq(c->upstream_broker.host, "127.0.0.1");
	cr_expect(eq(i64, (int64_t)(c->upstream_broker.port), (int64_t)(9092)));
	cr_expect(eq(i64, (int64_t)(c->upstream_connect_timeout_ms), (int64_t)(5000)));
	cr_expect(c->upstream_tls.enabled);
	cr_expect(c->upstream_tls.verify_hostname);
	cr_expect_str_eq(c->advertise_template, "{host}:19092");
	cr_expect(eq(i64, (int64_t)(c->nadvertise_nodes), (int64_t)(0)));
	cr_expect(eq(i64, (int64_t)(c->max_frame_bytes), (int64_t)(104857600)));
	cr_expect(eq(i64, (int64_t)(c->max_held_bytes_per_connection), (int64_t)(67108864)));
	cr_expect(eq(i64, (int64_t)(c->max_held_bytes), (int64_t)(1073741824)));
	cr_expect(eq(i64, (int64_t)(c->gate_max_hold_ms), (int64_t)(30000)));
	cr_expect(eq(i64, (int64_t)(c->gate_acks1), (int64_t)(CONF_ACKS1_PASS)));
	cr_expect(eq(i64, (int64_t)(c->gate_advertise_produce_v14), (int64_t)(CONF_V14_AUTO)));
	cr_expect(eq(i64, (int64_t)(c->code_mirror_sync_replication_timeout), (int64_t)(190)));
	cr_expect(eq(i64, (int64_t)(c->code_not_enough_remote_replicas_after_append), (int64_t)(191)));

	cr_assert(eq(i64, (int64_t)(c->nmirrors), (int64_t)(1)));
	const struct conf_mirror *m = mirror_named(c, "dr-east");
	cr_assert_not_null(m);
	cr_expect_str_eq(m->bootstrap, "dr-east-1:9092,dr-east-2:9092");
	cr_assert(eq(i64, (int64_t)(m->nprops), (int64_t)(4)));
	cr_expect_str_eq(m->props[0].name, "security.protocol");
	cr_expect_str_eq(m->props[0].value, "SASL_SSL");
	cr_expect_not(m->props[0].secret);
	cr_expect_str_eq(m->props[3].name, "sasl.password");
	cr_expect_str_eq(m->props[3].value, "s3cret-pw", "trailing newline stripped");
	cr_expect(m->props[3].secret);
	cr_expect_str_eq(m->topic_name, "{topic}");
	cr_expect(eq(i64, (int64_t)(m->offsets), (int64_t)(CONF_OFFSETS_PRESERVED)));
	cr_expect(eq(i64, (int64_t)(m->progress), (int64_t)(CONF_PROGRESS_POLL)));
	cr_expect(eq(i64, (int64_t)(m->poll_interval_ms), (int64_t)(5)));
	cr_expect_str_eq(m->mm2_offset_syncs_topic, "mm2-offset-syncs.dr-east.internal");
	cr_assert(eq(i64, (int64_t)(m->nsync_topics), (int64_t)(2)));
	cr_expect_str_eq(m->sync_topics[0], "orders.*");
	cr_expect_str_eq(m->sync_topics[1], "payments");
	cr_expect(eq(i64, (int64_t)(m->sync_topic_demote_timeout_ms), (int64_t)(30000)));
	cr_expect_str_eq(c->state_topic, "__syncgate_state");
	cr_expect(eq(i64, (int64_t)(c->state_replication_factor), (int64_t)(3)));
	cr_expect_str_eq(c->admin_listen.host, "127.0.0.1");
	cr_expect(eq(i64, (int64_t)(c->admin_listen.port), (int64_t)(9464)));
	cr_expect(strstr(c->admin_token_file, "/admin.token") != NULL);
	cr_expect(eq(i64, (int64_t)(c->log_level), (int64_t)(LOG_INFO)));
	cr_expect_null(mirror_named(c, "dr-west"));

	conf_free(c);
	conf_errors_free(&e);
	free(tmpl);
	free(yaml);
}

Test(conf, defaults_applied)
{
	struct conf *c = load_ok(minimal);
	cr_expect(eq(i64, (int64_t)(c->mode), (int64_t)(CONF_MODE_SIDECAR)));
	cr_expect_not(c->listen_tls.enabled);
	cr_expect_null(c->listen_tls.cert);
	cr_expect_not(c->upstream_tls.enabled);
	cr_expect(c->upstream_tls.verify_hostname);
	cr_expect(eq(i64, (int64_t)(c->upstream_connect_timeout_ms), (int64_t)(5000)));
	cr_expect_str_eq(c->advertise_template, "{host}:19092", "default follows listen.kafka's port");
	cr_expect(eq(i64, (int64_t)(c->advertise_base_port), (int64_t)(0)));
	cr_expect(eq(i64, (int64_t)(c->max_frame_bytes), (int64_t)(104857600)));
	cr_expect(eq(i64, (int64_t)(c->max_held_bytes_per_connection), (int64_t)(67108864)));
	cr_expect(eq(i64, (int64_t)(c->max_held_bytes), (int64_t)(1073741824)));
	cr_expect(eq(i64, (int64_t)(c->gate_max_hold_ms), (int64_t)(30000)));
	cr_expect(eq(i64, (int64_t)(c->gate_acks1), (int64_t)(CONF_ACKS1_PASS)));
	cr_expect(eq(i64, (int64_t)(c->gate_advertise_produce_v14), (int64_t)(CONF_V14_AUTO)));
	cr_expect(eq(i64, (int64_t)(c->code_mirror_sync_replication_timeout), (int64_t)(190)));
	cr_expect(eq(i64, (int64_t)(c->code_not_enough_remote_replicas_after_append), (int64_t)(191)));
	cr_expect_str_eq(c->state_topic, "__syncgate_state");
	cr_expect(eq(i64, (int64_t)(c->state_replication_factor), (int64_t)(3)));
	cr_expect_str_eq(c->admin_listen.host, "127.0.0.1");
	cr_expect(eq(i64, (int64_t)(c->admin_listen.port), (int64_t)(9464)));
	cr_expect_null(c->admin_token_file);
	cr_expect(eq(i64, (int64_t)(c->log_level), (int64_t)(LOG_INFO)));
	cr_assert(eq(i64, (int64_t)(c->nmirrors), (int64_t)(1)));
	const struct conf_mirror *m = &c->mirrors[0];
	cr_expect(eq(i64, (int64_t)(m->nprops), (int64_t)(0)));
	cr_expect_str_eq(m->topic_name, "{topic}");
	cr_expect(eq(i64, (int64_t)(m->offsets), (int64_t)(CONF_OFFSETS_PRESERVED)));
	cr_expect(eq(i64, (int64_t)(m->progress), (int64_t)(CONF_PROGRESS_POLL)));
	cr_expect(eq(i64, (int64_t)(m->poll_interval_ms), (int64_t)(5)));
	cr_expect_str_eq(m->mm2_offset_syncs_topic, "mm2-offset-syncs.dr-east.internal");
	cr_expect(eq(i64, (int64_t)(m->nsync_topics), (int64_t)(0)));
	cr_expect(eq(i64, (int64_t)(m->sync_topic_demote_timeout_ms), (int64_t)(30000)));
	conf_free(c);
}

Test(conf, no_mirrors_is_fine)
{
	struct conf *c = load_ok("listen: {kafka: \"[::]:0\"}\nupstream: {broker: \"[fe80::1]:9092\"}\nmirrors: []\n");
	cr_expect(eq(i64, (int64_t)(c->nmirrors), (int64_t)(0)));
	cr_expect_str_eq(c->listen_kafka.host, "::");
	cr_expect(eq(i64, (int64_t)(c->listen_kafka.port), (int64_t)(0)), "port 0 allowed on listeners");
	cr_expect_str_eq(c->upstream_broker.host, "fe80::1");
	cr_expect_str_eq(c->advertise_template, "{host}:0");
	conf_free(c);
}

Test(conf, every_setting_set)
{
	struct conf *c = load_ok(
		"mode: gateway\n"
		"listen: {kafka: \"127.0.0.1:7000\"}\n"
		"upstream: {broker: \"b1:9092\", connect_timeout_ms: 250, tls: {verify_hostname: false}}\n"
		"advertise:\n  template: \"kafka-{id}.example.com:7000\"\n  base_port: 20000\n"
		"  nodes: {1: \"k1.example.com:19092\", 2: \"[2001:db8::2]:19092\"}\n"
		"limits: {max_frame_bytes: 2048, max_held_bytes_per_connection: 4096, max_held_bytes: 8192}\n"
		"gate:\n  max_hold_ms: 1500\n  acks1: gate\n  advertise_produce_v14: never\n"
		"  error_codes: {mirror_sync_replication_timeout: 150, not_enough_remote_replicas_after_append: 151}\n"
		"mirrors:\n"
		"  - name: m2\n    bootstrap: x:1\n    offsets: mm2\n    progress: tail\n    poll_interval_ms: 50\n"
		"    topic_name: \"src.{topic}\"\n    mm2_offset_syncs_topic: mm2-offset-syncs.east.internal\n"
		"    sync_topic_demote_timeout_ms: 1000\n    mm2_isolation_level: read_committed\n"
		"    properties: {linger.ms: 0, enable.idempotence: true, client.id: sg}\n"
		"state: {topic: sg.state, replication_factor: 1}\n"
		"admin: {listen: \"0.0.0.0:0\"}\n"
		"log: {level: debug}\n");
	cr_expect(eq(i64, (int64_t)(c->mode), (int64_t)(CONF_MODE_GATEWAY)));
	cr_expect(eq(i64, (int64_t)(c->upstream_connect_timeout_ms), (int64_t)(250)));
	cr_expect(c->upstream_tls.enabled);
	cr_expect_not(c->upstream_tls.verify_hostname);
	cr_expect_str_eq(c->advertise_template, "kafka-{id}.example.com:7000");
	cr_expect(eq(i64, (int64_t)(c->advertise_base_port), (int64_t)(20000)));
	cr_assert(eq(i64, (int64_t)(c->nadvertise_nodes), (int64_t)(2)));
	cr_expect(eq(i64, (int64_t)(c->advertise_nodes[1].node_id), (int64_t)(2)));
	cr_expect_str_eq(c->advertise_nodes[1].addr.host, "2001:db8::2");
	cr_expect(eq(i64, (int64_t)(c->advertise_nodes[1].addr.port), (int64_t)(19092)));
	cr_expect(eq(i64, (int64_t)(c->max_frame_bytes), (int64_t)(2048)));
	cr_expect(eq(i64, (int64_t)(c->gate_max_hold_ms), (int64_t)(1500)));
	cr_expect(eq(i64, (int64_t)(c->gate_acks1), (int64_t)(CONF_ACKS1_GATE)));
	cr_expect(eq(i64, (int64_t)(c->gate_advertise_produce_v14), (int64_t)(CONF_V14_NEVER)));
	cr_expect(eq(i64, (int64_t)(c->code_mirror_sync_replication_timeout), (int64_t)(150)));
	cr_expect(eq(i64, (int64_t)(c->code_not_enough_remote_replicas_after_append), (int64_t)(151)));
	const struct conf_mirror *m = &c->mirrors[0];
	cr_expect(eq(i64, (int64_t)(m->offsets), (int64_t)(CONF_OFFSETS_MM2)));
	cr_expect(eq(i64, (int64_t)(m->progress), (int64_t)(CONF_PROGRESS_TAIL)));
	cr_expect(eq(i64, (int64_t)(m->poll_interval_ms), (int64_t)(50)));
	cr_expect_str_eq(m->topic_name, "src.{topic}");
	cr_expect_str_eq(m->mm2_offset_syncs_topic, "mm2-offset-syncs.east.internal");
	cr_expect(eq(i64, (int64_t)(m->mm2_isolation_level), (int64_t)(CONF_ISOLATION_READ_COMMITTED)));
	cr_assert(eq(i64, (int64_t)(m->nprops), (int64_t)(3)));
	cr_expect_str_eq(m->props[0].value, "0", "numbers stringified as written");
	cr_expect_str_eq(m->props[1].value, "true", "booleans stringified as written");
	cr_expect_str_eq(c->state_topic, "sg.state");
	cr_expect(eq(i64, (int64_t)(c->admin_listen.port), (int64_t)(0)));
	cr_expect(eq(i64, (int64_t)(c->log_level), (int64_t)(LOG_DEBUG)));
	conf_free(c);
}

Test(conf, exempt_principals_match_the_subject_or_its_cn)
{
	struct conf *c = load_ok(
		"listen: {kafka: \"127.0.0.1:7000\", tls: {cert: /dev/null, key: /dev/null, client_ca: /dev/null}}\n"
		"upstream: {broker: \"b1:9092\"}\n"
		"consumers:\n  exempt_principals: [\"mm2-.*\", \"CN=linker,O=Example\"]\n");
	cr_assert(eq(i64, (int64_t)(c->nconsumers_exempt_principals), (int64_t)(2)));
	static const struct { const char *subject, *cn; bool want; } cases[] = {
		{ "CN=mm2-east,O=Example", "mm2-east", true },  /* by CN */
		{ "CN=linker,O=Example", "linker", true },      /* by the whole subject */
		{ "CN=linker,O=Other", "linker", false },
		{ "CN=xmm2-east", "xmm2-east", false },         /* anchored */
		{ "O=Example,CN=mm2-a", NULL, false },          /* the subject must match whole */
		{ NULL, "mm2-a", true },
		{ NULL, NULL, false },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cr_expect(eq(i64, (int64_t)(conf_consumer_exempt_principal(c, cases[i].subject, cases[i].cn)), (int64_t)(cases[i].want)),
			     "%s / %s", cases[i].subject ? cases[i].subject : "(null)", cases[i].cn ? cases[i].cn : "(null)");
	cr_expect_not(conf_consumer_exempt_principal(NULL, "CN=mm2-a", "mm2-a"));
	conf_free(c);
}

Test(conf, sync_topics_match_whole_names)
{
	struct conf *c = load_ok(
		"listen: {kafka: \"h:1\"}\nupstream: {broker: \"h:2\"}\n"
		"mirrors:\n  - name: a\n    bootstrap: b:1\n    sync_topics: [\"orders.*\", payments, \"ev-[0-9]+|audit\"]\n");
	const struct conf_mirror *m = &c->mirrors[0];
	cr_expect(conf_mirror_sync_topic(m, "orders"));
	cr_expect(conf_mirror_sync_topic(m, "orders.eu"));
	cr_expect(conf_mirror_sync_topic(m, "payments"));
	cr_expect_not(conf_mirror_sync_topic(m, "payments2"), "anchored at the end");
	cr_expect_not(conf_mirror_sync_topic(m, "xpayments"), "anchored at the start");
	cr_expect(conf_mirror_sync_topic(m, "ev-42"));
	cr_expect(conf_mirror_sync_topic(m, "audit"), "alternation is inside the anchors");
	cr_expect_not(conf_mirror_sync_topic(m, "ev-42x"));
	cr_expect_not(conf_mirror_sync_topic(NULL, "orders"));
	conf_free(c);
}

Test(conf, env_secret_resolved)
{
	setenv("SG_TEST_PW", "env-s3cret", 1);
	struct conf *c = load_ok(
		"listen: {kafka: \"h:1\"}\nupstream: {broker: \"h:2\"}\n"
		"mirrors:\n  - name: a\n    bootstrap: b:1\n"
		"    properties: {sasl.password: \"${env:SG_TEST_PW}\", sasl.username: \"user-${env:SG_TEST_PW}\"}\n");
	cr_expect_str_eq(c->mirrors[0].props[0].value, "env-s3cret");
	cr_expect(c->mirrors[0].props[0].secret);
	cr_expect_str_eq(c->mirrors[0].props[1].value, "user-env-s3cret");
	conf_free(c);
}

Test(conf, secrets_never_in_error_text)
{
	const char *secret = "Tr0ub4dor&3-very-secret";
	setenv("SG_TEST_SECRET", secret, 1);
	char dir[] = "/tmp/sgsecret-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	write_file(dir, "pw", "Tr0ub4dor&3-very-secret\n");
	char yaml[2048];
	snprintf(yaml, sizeof(yaml),
		 "listen: {kafka: \"h:1\"}\nupstream: {broker: \"h:2\"}\n"
		 "mirrors:\n"
		 "  - name: a\n    bootstrap: b:1\n"
		 "    properties:\n"
		 "      sasl.password: ${env:SG_TEST_SECRET}\n"
		 "      sasl.password: ${env:SG_TEST_SECRET}\n"      /* duplicate */
		 "      ssl.key.password: ${file:%s/pw}\n"
		 "      ssl.key.pem: [\"${file:%s/pw}\"]\n"              /* wrong type */
		 "      x.y: ${file:%s/missing}\n"                  /* missing file */
		 "      x.z: ${env:SG_TEST_NOT_SET_EVER}\n"         /* unset env */
		 "    bogus: 1\n",
		 dir, dir, dir);
	unsetenv("SG_TEST_NOT_SET_EVER");
	struct conf_errors e = { 0 };
	struct conf *c = conf_load_string("s.yaml", yaml, strlen(yaml), &e);
	cr_assert_null(c);
	cr_expect(eq(i64, (int64_t)(e.n), (int64_t)(5)), "got %zu errors", e.n);
	char *text = errors_text(&e);
	cr_expect(strstr(text, secret) == NULL, "secret leaked into:\n%s", text);
	cr_expect(strstr(text, "Tr0ub4dor") == NULL, "secret prefix leaked into:\n%s", text);
	cr_expect(strstr(text, "SG_TEST_NOT_SET_EVER") != NULL, "names the variable");
	cr_expect(strstr(text, "/missing") != NULL, "names the file");
	free(text);
	conf_errors_free(&e);
}

Test(conf, addr_parse_forms)
{
	static const struct {
		const char *in;
		bool port0;
		const char *host; /* NULL: error */
		int port;
		const char *why;
	} t[] = {
		{ "kafka-1:9092", false, "kafka-1", 9092, NULL },
		{ "0.0.0.0:19092", false, "0.0.0.0", 19092, NULL },
		{ "[::1]:9092", false, "::1", 9092, NULL },
		{ "[2001:db8::1]:1", false, "2001:db8::1", 1, NULL },
		{ "h:0", true, "h", 0, NULL },
		{ "h:0", false, NULL, 0, "port out of range (1..65535)" },
		{ "h:65535", false, "h", 65535, NULL },
		{ "h:65536", false, NULL, 0, "port out of range (1..65535)" },
		{ "h", false, NULL, 0, "missing port (expected host:port)" },
		{ "h:", false, NULL, 0, "missing port (expected host:port)" },
		{ ":9092", false, NULL, 0, "empty host" },
		{ "h:9x", false, NULL, 0, "port is not a number" },
		{ "::1:9092", false, NULL, 0, "an IPv6 address must be in brackets ([addr]:port)" },
		{ "[::1]", false, NULL, 0, "missing port (expected [ipv6]:port)" },
		{ "[::1:9092", false, NULL, 0, "missing ']' after IPv6 address" },
		{ "[]:1", false, NULL, 0, "empty host" },
		{ "", false, NULL, 0, "empty address" },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		struct conf_addr a = { 0 };
		const char *why = conf_addr_parse(t[i].in, t[i].port0, &a);
		if (t[i].host) {
			cr_expect_null(why, "'%s': %s", t[i].in, why);
			cr_expect_str_eq(a.host, t[i].host, "'%s'", t[i].in);
			cr_expect(eq(i64, (int64_t)(a.port), (int64_t)(t[i].port)), "'%s'", t[i].in);
			char buf[128];
			cr_expect_str_eq(conf_addr_format(&a, buf, sizeof(buf)), t[i].in, "round trip");
			free(a.host);
		} else {
			cr_expect_str_eq(why ? why : "(none)", t[i].why, "'%s'", t[i].in);
		}
	}
}

Test(conf, reload_check_names_restart_settings)
{
	struct conf *a = load_ok(minimal);
	struct conf *b = load_ok(
		"listen:\n  kafka: 0.0.0.0:19093\n"
		"upstream:\n  broker: 127.0.0.1:9092\n  connect_timeout_ms: 100\n"
		"gate: {max_hold_ms: 5}\n"
		"log: {level: debug}\n"
		"state: {topic: other}\n"
		"mirrors:\n  - name: dr-west\n    bootstrap: c:9092\n");
	char buf[256];
	cr_expect(eq(i64, (int64_t)(conf_reload_check(a, a, buf, sizeof(buf))), (int64_t)(0)));
	cr_expect_str_eq(buf, "");
	size_t n = conf_reload_check(a, b, buf, sizeof(buf));
	/* advertise.template follows listen.kafka's port, so it changes too */
	cr_expect_str_eq(buf, "listen.kafka,advertise.template,state.topic");
	cr_expect(eq(i64, (int64_t)(n), (int64_t)(3)));
	conf_free(a);
	conf_free(b);
}

Test(conf, reload_keep_restart_restores_old_values)
{
	struct conf *a = load_ok(minimal);
	struct conf *b = load_ok(
		"listen:\n  kafka: 0.0.0.0:19093\n"
		"upstream:\n  broker: 127.0.0.1:9092\n  connect_timeout_ms: 100\n"
		"advertise:\n  nodes: {1: \"h1:1\", 2: \"h2:2\"}\n"
		"limits: {max_frame_bytes: 2048}\n"
		"log: {level: debug}\n"
		"state: {topic: other}\n");
	char buf[256];
	cr_expect(eq(i64, (int64_t)(conf_reload_keep_restart(a, b, buf, sizeof(buf))), (int64_t)(5)));
	cr_expect_str_eq(buf, "listen.kafka,advertise.template,advertise.nodes,"
			      "limits.max_frame_bytes,state.topic");
	/* restart settings are back to the old values, live ones keep the new */
	cr_expect(eq(i64, (int64_t)(conf_reload_check(a, b, buf, sizeof(buf))), (int64_t)(0)));
	cr_expect(eq(i64, (int64_t)(b->listen_kafka.port), (int64_t)(a->listen_kafka.port)));
	cr_expect_str_eq(b->state_topic, a->state_topic);
	cr_expect(eq(i64, (int64_t)(b->nadvertise_nodes), (int64_t)(a->nadvertise_nodes)));
	cr_expect(eq(i64, (int64_t)(b->max_frame_bytes), (int64_t)(a->max_frame_bytes)));
	cr_expect(eq(i64, (int64_t)(b->upstream_connect_timeout_ms), (int64_t)(100)));
	cr_expect(eq(i64, (int64_t)(b->log_level), (int64_t)(LOG_DEBUG)));
	conf_free(a);
	conf_free(b); /* the copies are b's own: no double free under ASan */
}

Test(conf, settings_table_is_complete)
{
	for (size_t i = 0; i < conf_nsettings; i++) {
		const struct conf_setting *s = &conf_settings[i];
		cr_expect(s->doc && strlen(s->doc) > 10, "%s has no doc", s->path);
		cr_expect(eq(i64, (int64_t)(conf_setting_find(s->path)), (int64_t)(s)), "%s is not unique", s->path);
		if (s->type == CONF_T_ENUM)
			cr_expect_not_null(s->names, "%s has no names", s->path);
		if (s->flags & CONF_F_REQUIRED)
			cr_expect_null(s->def, "%s is required and has a default", s->path);
		if (strchr(s->path, '.')) {
			/* every key's parent is a section (or the mirrors list) */
			char parent[128];
			snprintf(parent, sizeof(parent), "%.*s", (int)(strrchr(s->path, '.') - s->path), s->path);
			const struct conf_setting *p = conf_setting_find(parent);
			cr_expect(p || strcmp(parent, "mirrors[]") == 0, "%s has no parent", s->path);
			if (p)
				cr_expect(p < s, "%s comes before its parent", s->path);
		}
	}
}

Test(conf, reference_doc_is_current)
{
	char *want = NULL;
	size_t n = 0;
	FILE *m = open_memstream(&want, &n);
	conf_reference_write(m);
	fclose(m);
	char *have = slurp(SOURCE_ROOT "/docs/configuration.md");
	cr_expect_str_eq(have, want,
			 "docs/configuration.md is stale: regenerate with "
			 "build/tests/conf/conf-reference > docs/configuration.md");
	for (size_t i = 0; i < conf_nsettings; i++) {
		char key[160];
		snprintf(key, sizeof(key), "`%s`", conf_settings[i].path);
		cr_expect(strstr(want, key) != NULL, "%s missing from the reference", conf_settings[i].path);
	}
	free(want);
	free(have);
}

/* The table's CONF_F_WORKER flag, not a hand list, decides what restarts a
 * mirror worker on reload. */
Test(conf, worker_restarts_follow_the_settings_table)
{
	static const char *base = "listen: {kafka: \"127.0.0.1:9092\"}\nupstream: {broker: \"127.0.0.1:19092\"}\n"
				  "mirrors:\n  - name: dr\n    bootstrap: \"d:9092\"\n";
	static const struct {
		const char *extra;
		bool restart;
	} cases[] = {
		{"", false},
		{"    sync_topic_demote_timeout_ms: 5000\n", false},
		{"    poll_interval_ms: 7\n", true},
		{"    sync_topics: [\"orders\"]\n", true},
		{"    properties: {\"client.id\": \"x\"}\n", true},
		{"    topic_name: \"dr.{topic}\"\n", true},
		{"    offsets: mm2\n", true},
	};
	char doc[512];
	snprintf(doc, sizeof(doc), "%s", base);
	struct conf *a = load_ok(doc);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(doc, sizeof(doc), "%s%s", base, cases[i].extra);
		struct conf *b = load_ok(doc);
		cr_expect(eq(i64, (int64_t)(conf_mirror_worker_changed(a, &a->mirrors[0], b, &b->mirrors[0])), (int64_t)(cases[i].restart)),
			     "case %zu: %s", i, cases[i].extra);
		conf_free(b);
	}
	conf_free(a);
}

Test(conf, mirror_derived_defaults)
{
	struct conf *c = load_ok("listen: {kafka: \"127.0.0.1:9092\"}\nupstream: {broker: \"127.0.0.1:19092\"}\n"
				 "mirrors:\n  - name: dr\n    bootstrap: \"d:9092\"\n");
	const struct conf_mirror *m = &c->mirrors[0];
	cr_expect_str_eq(conf_mirror_topic_name(m), "{topic}");
	cr_expect(eq(i64, (int64_t)(conf_mirror_demote_timeout_ms(m)), (int64_t)(30000)));
	char *t = conf_mirror_offset_syncs_topic(m);
	cr_expect_str_eq(t, "mm2-offset-syncs.dr.internal");
	free(t);
	conf_free(c);
}

/* Production security: source.properties (secrets resolved, secret-named plain values
 * flagged), admin.tls, the connection caps. */
Test(conf, source_properties_and_admin_tls)
{
	setenv("SG_TEST_SRC_PW", "src-pw-1", 1);
	static const char yaml[] =
		"listen: {kafka: \"0.0.0.0:1\"}\nupstream: {broker: \"127.0.0.1:9092\"}\n"
		"limits: {max_connections: 5, max_connection_rate: 7}\n"
		"source:\n  properties:\n    security.protocol: sasl_ssl\n"
		"    sasl.mechanisms: PLAIN\n    sasl.username: sg\n"
		"    sasl.password: ${env:SG_TEST_SRC_PW}\n    ssl.key.password: plain-but-secret\n"
		"admin:\n  listen: \"127.0.0.1:2\"\n  tls: {cert: /dev/null, key: /dev/null}\n";
	struct conf_errors e = { 0 };
	struct conf *c = conf_load_string("s.yaml", yaml, strlen(yaml), &e);
	cr_assert_not_null(c, "errors: %zu", e.n);
	cr_assert(eq(i64, (int64_t)(c->nsource_props), (int64_t)(5)));
	cr_expect_str_eq(c->source_props[3].name, "sasl.password");
	cr_expect_str_eq(c->source_props[3].value, "src-pw-1");
	cr_expect(c->source_props[3].secret);
	cr_expect(c->source_props[4].secret, "ssl.key.password is secret even when written in clear");
	cr_expect_not(c->source_props[0].secret);
	cr_expect(c->admin_tls.enabled);
	cr_expect(eq(i64, (int64_t)(c->max_connections), (int64_t)(5)));
	cr_expect(eq(i64, (int64_t)(c->max_connection_rate), (int64_t)(7)));
	conf_free(c);
	unsetenv("SG_TEST_SRC_PW");
}

Test(conf, source_properties_no_bootstrap)
{
	static const char yaml[] =
		"listen: {kafka: \"0.0.0.0:1\"}\nupstream: {broker: \"127.0.0.1:9092\"}\n"
		"source:\n  properties:\n    bootstrap.servers: x:1\n";
	struct conf_errors e = { 0 };
	struct conf *c = conf_load_string("s.yaml", yaml, strlen(yaml), &e);
	cr_assert_null(c);
	char *text = errors_text(&e);
	cr_expect_not_null(strstr(text, "'bootstrap.servers' is set by upstream.broker"), "%s", text);
	free(text);
	conf_errors_free(&e);
}

Test(conf, limits_defaults)
{
	static const char yaml[] = "listen: {kafka: \"0.0.0.0:1\"}\nupstream: {broker: \"127.0.0.1:9092\"}\n";
	struct conf *c = conf_load_string("s.yaml", yaml, strlen(yaml), NULL);
	cr_assert_not_null(c);
	cr_expect(eq(i64, (int64_t)(c->max_connections), (int64_t)(10000)));
	cr_expect(eq(i64, (int64_t)(c->max_connection_rate), (int64_t)(0)));
	cr_expect_not(c->admin_tls.enabled);
	cr_expect(eq(i64, (int64_t)(c->nsource_props), (int64_t)(0)));
	conf_free(c);
}

Test(conf, prop_names_sensitive)
{
	cr_expect(conf_prop_name_sensitive("sasl.password"));
	cr_expect(conf_prop_name_sensitive("ssl.key.password"));
	cr_expect(conf_prop_name_sensitive("ssl.key.pem"));
	cr_expect(conf_prop_name_sensitive("sasl.oauthbearer.client.secret"));
	cr_expect(conf_prop_name_sensitive("sasl.oauthbearer.config"));
	cr_expect_not(conf_prop_name_sensitive("sasl.username"));
	cr_expect_not(conf_prop_name_sensitive("ssl.key.location"));
	cr_expect_not(conf_prop_name_sensitive("security.protocol"));
}
