/*
 * load.c — read the YAML file with libyaml (document API) and walk it with
 * the settings table: defaults first, then every key found, then required
 * keys and the checks that involve several keys. Every problem becomes a
 * `file:line:col: message` in the caller's conf_errors; the walk never stops
 * at the first one.
 */
#include "conf/loader.h"

#include <errno.h>
#include <inttypes.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#define CONF_FILE_MAX (16 * 1024 * 1024)

/* Per mapping scope (top level, or one mirror): which settings were seen and
 * where their values are. */
struct scope {
	bool *seen;              /* [conf_nsettings] */
	yaml_mark_t *marks;      /* [conf_nsettings], value marks */
	void *base;              /* struct conf * or struct conf_mirror * */
};

void conf_err_at(struct loader *L, yaml_mark_t m, const char *fmt, ...)
{
	char msg[1024];
	CONF_FORMAT_ARGS(msg, fmt);
	conf_errors_add(L->errs, (int)m.line + 1, (int)m.column + 1, "%s", msg);
	L->nerrs++;
}

static const char *parent_of(const char *path, char *buf, size_t n)
{
	const char *dot = strrchr(path, '.');
	snprintf(buf, n, "%.*s", dot ? (int)(dot - path) : 0, path);
	return buf;
}

static bool in_mirror(const struct conf_setting *s)
{
	return strncmp(s->path, "mirrors[].", 10) == 0;
}
/* ---- scalar conversion (shared by YAML values and defaults) ---- */

static const char *enum_list(const char *const *names, char *buf, size_t n)
{
	size_t cnt = 0, o = 0;
	while (names[cnt])
		cnt++;
	buf[0] = 0;
	for (size_t i = 0; i < cnt && o < n; i++)
		o += (size_t)snprintf(buf + o, n - o, "%s%s", i == 0 ? "" : i + 1 == cnt ? " or " : ", ", names[i]);
	return buf;
}

/* Store `text` into the setting's field. Returns NULL or a message (which
 * may point into buf). Never puts the value of a secret into a message:
 * secrets only reach CONF_T_PROPS, which is not converted here. */
static const char *convert(const struct conf_setting *s, void *base, const char *text, bool plain,
			   char *buf, size_t n)
{
	void *f = field(base, s);
	if ((s->type == CONF_T_STRING || s->type == CONF_T_ADDR) && strstr(text, "${"))
		return "${...} references are only resolved in mirrors[].properties and source.properties";
	switch (s->type) {
	case CONF_T_STRING: {
		const char *why = s->check ? s->check(text, buf, n) : NULL;
		if (why)
			return why;
		char *dup = strdup(text);
		if (!dup)
			return "out of memory";
		free(*(char **)f);
		*(char **)f = dup;
		return NULL;
	}
	case CONF_T_INT:
	case CONF_T_INT16:
	case CONF_T_INT64: {
		if (!plain)
			return "expected an integer, got a quoted string";
		errno = 0;
		char *end;
		long long v = strtoll(text, &end, 10);
		if (!*text || *end || errno == ERANGE) {
			snprintf(buf, n, "expected an integer, got '%.60s'", text);
			return buf;
		}
		if (v < s->min || v > s->max) {
			snprintf(buf, n, "%lld is out of range (%" PRId64 "..%" PRId64 ")", v, s->min, s->max);
			return buf;
		}
		if (s->type == CONF_T_INT)
			*(int *)f = (int)v;
		else if (s->type == CONF_T_INT16)
			*(int16_t *)f = (int16_t)v;
		else
			*(int64_t *)f = (int64_t)v;
		return NULL;
	}
	case CONF_T_BOOL:
		if (plain && (!strcmp(text, "true") || !strcmp(text, "True") || !strcmp(text, "TRUE"))) {
			*(bool *)f = true;
			return NULL;
		}
		if (plain && (!strcmp(text, "false") || !strcmp(text, "False") || !strcmp(text, "FALSE"))) {
			*(bool *)f = false;
			return NULL;
		}
		snprintf(buf, n, "expected true or false, got '%.60s'", text);
		return buf;
	case CONF_T_ENUM:
		for (int i = 0; s->names[i]; i++)
			if (!strcmp(text, s->names[i])) {
				*(int *)f = i;
				return NULL;
			}
		{
			char list[256];
			snprintf(buf, n, "unknown value '%.60s' (expected %s)", text, enum_list(s->names, list, sizeof(list)));
		}
		return buf;
	case CONF_T_ADDR: {
		struct conf_addr a;
		const char *why = conf_addr_parse(text, s->flags & CONF_F_PORT0, &a);
		if (why) {
			snprintf(buf, n, "invalid address '%.100s': %s", text, why);
			return buf;
		}
		struct conf_addr *dst = f;
		free(dst->host);
		*dst = a;
		return NULL;
	}
	default:
		return "internal error: not a scalar setting";
	}
}

static void apply_defaults(struct loader *L, void *base, bool mirror)
{
	char buf[256];
	for (size_t i = 0; i < conf_nsettings; i++) {
		const struct conf_setting *s = &conf_settings[i];
		if (!s->def || in_mirror(s) != mirror)
			continue;
		const char *why = convert(s, base, s->def, true, buf, sizeof(buf));
		if (why) { /* a broken table: tests catch it */
			conf_errors_add(L->errs, 0, 0, "internal error: default of %s: %s", s->path, why);
			L->nerrs++;
		}
	}
}

/* ---- the walk ---- */

static void walk_map(struct loader *L, yaml_node_t *map, const char *prefix, const char *dprefix,
		     struct scope *sc);

static void join(char *out, size_t n, const char *a, const char *b)
{
	snprintf(out, n, "%s%s%s", a, *a ? "." : "", b);
}

/* Report REQUIRED keys under the absent section `sec` (recursively through
 * REQUIRED sections) as missing at `m`. */
static void missing_under(struct loader *L, const char *sec, const char *dsec, yaml_mark_t m)
{
	char par[256], d[300];
	for (size_t i = 0; i < conf_nsettings; i++) {
		const struct conf_setting *s = &conf_settings[i];
		if (!(s->flags & CONF_F_REQUIRED) || strcmp(parent_of(s->path, par, sizeof(par)), sec) != 0)
			continue;
		const char *key = strrchr(s->path, '.') ? strrchr(s->path, '.') + 1 : s->path;
		join(d, sizeof(d), dsec, key);
		if (s->type == CONF_T_SECTION)
			missing_under(L, s->path, d, m);
		else
			conf_err_at(L, m, "missing required key '%s'", d);
	}
}

/* After a mapping at `prefix` was walked: its absent REQUIRED children. */
static void check_required(struct loader *L, const char *prefix, const char *dprefix, yaml_mark_t m,
			   const struct scope *sc)
{
	char par[256], d[300];
	for (size_t i = 0; i < conf_nsettings; i++) {
		const struct conf_setting *s = &conf_settings[i];
		if (!(s->flags & CONF_F_REQUIRED) || sc->seen[i] ||
		    strcmp(parent_of(s->path, par, sizeof(par)), prefix) != 0)
			continue;
		const char *key = strrchr(s->path, '.') ? strrchr(s->path, '.') + 1 : s->path;
		join(d, sizeof(d), dprefix, key);
		if (s->type == CONF_T_SECTION)
			missing_under(L, s->path, d, m);
		else
			conf_err_at(L, m, "missing required key '%s'", d);
	}
}

static void set_mirrors(struct loader *L, const struct conf_setting *s, yaml_node_t *v, const char *dpath,
			struct conf *c)
{
	char g[80];
	if (is_null(v))
		return;
	if (v->type != YAML_SEQUENCE_NODE) {
		conf_err_at(L, v->start_mark, "%s: expected a list of mirrors, got %s", dpath, got(v, g, sizeof(g)));
		return;
	}
	size_t cnt = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
	c->mirrors = calloc(cnt + 1, sizeof(*c->mirrors));
	int *name_lines = calloc(cnt + 1, sizeof(*name_lines));
	bool *seen = calloc(conf_nsettings, sizeof(*seen));
	yaml_mark_t *marks = calloc(conf_nsettings, sizeof(*marks));
	const struct conf_setting *sname = conf_setting_find("mirrors[].name");
	size_t iname = (size_t)(sname - conf_settings);
	if (!c->mirrors || !name_lines || !seen || !marks) {
		conf_err_at(L, v->start_mark, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < cnt; i++) {
		yaml_node_t *it = node_at(L, v->data.sequence.items.start[i]);
		char dp[340];
		snprintf(dp, sizeof(dp), "%s[%zu]", dpath, i);
		if (it->type != YAML_MAPPING_NODE) {
			conf_err_at(L, it->start_mark, "%s: expected a mapping, got %s", dp, got(it, g, sizeof(g)));
			continue;
		}
		struct conf_mirror *mi = &c->mirrors[c->nmirrors];
		memset(seen, 0, conf_nsettings * sizeof(*seen));
		struct scope sc = { seen, marks, mi };
		apply_defaults(L, mi, true);
		walk_map(L, it, "mirrors[]", dp, &sc);
		if (mi->name) {
			for (size_t j = 0; j < c->nmirrors; j++)
				if (c->mirrors[j].name && !strcmp(c->mirrors[j].name, mi->name)) {
					conf_err_at(L, marks[iname], "%s.name: duplicate mirror name '%s' (first at line %d)", dp,
					       mi->name, name_lines[j]);
					break;
				}
			name_lines[c->nmirrors] = (int)marks[iname].line + 1;
			if (!mi->mm2_offset_syncs_topic)
				mi->mm2_offset_syncs_topic = conf_mirror_offset_syncs_topic(mi);
		}
		c->nmirrors++;
	}
out:
	free(name_lines);
	free(seen);
	free(marks);
	(void)s;
}

static void set_value(struct loader *L, const struct conf_setting *s, yaml_node_t *v, const char *path,
		      const char *dpath, struct scope *sc)
{
	char g[80], buf[512];
	switch (s->type) {
	case CONF_T_SECTION:
		if (s->offset != CONF_F_NOOFFSET)
			*(bool *)field(sc->base, s) = true;
		if (is_null(v)) {
			check_required(L, path, dpath, v->start_mark, sc);
			return;
		}
		if (v->type != YAML_MAPPING_NODE) {
			conf_err_at(L, v->start_mark, "%s: expected a mapping, got %s", dpath, got(v, g, sizeof(g)));
			return;
		}
		walk_map(L, v, path, dpath, sc);
		return;
	case CONF_T_LIST:
		set_mirrors(L, s, v, dpath, sc->base);
		return;
	case CONF_T_REGEXES:
		conf_set_regexes(L, s, v, dpath, sc->base);
		return;
	case CONF_T_PROPS:
		conf_set_props(L, s, v, dpath, sc->base);
		return;
	case CONF_T_NODES:
		conf_set_nodes(L, s, v, dpath, sc->base);
		return;
	default:
		break;
	}
	if (v->type != YAML_SCALAR_NODE || is_null(v)) {
		conf_err_at(L, v->start_mark, "%s: expected %s, got %s", dpath, conf_type_str(s->type), got(v, g, sizeof(g)));
		return;
	}
	const char *why = convert(s, sc->base, scalar(v), is_plain(v), buf, sizeof(buf));
	if (why)
		conf_err_at(L, v->start_mark, "%s: %s", dpath, why);
}

static void walk_map(struct loader *L, yaml_node_t *map, const char *prefix, const char *dprefix,
		     struct scope *sc)
{
	char g[80], path[256], dpath[300];
	for (yaml_node_pair_t *pr = map->data.mapping.pairs.start; pr < map->data.mapping.pairs.top; pr++) {
		yaml_node_t *k = node_at(L, pr->key), *v = node_at(L, pr->value);
		if (k->type != YAML_SCALAR_NODE) {
			conf_err_at(L, k->start_mark, "%s: a key must be a string, got %s", *dprefix ? dprefix : "top level",
			       got(k, g, sizeof(g)));
			continue;
		}
		const char *key = scalar(k);
		join(path, sizeof(path), prefix, key);
		join(dpath, sizeof(dpath), dprefix, key);
		const struct conf_setting *s = strpbrk(key, ".[]") ? NULL : conf_setting_find(path);
		if (!s) {
			const char *near = conf_setting_near(prefix, key);
			if (near)
				conf_err_at(L, k->start_mark, "unknown key '%.200s' (did you mean '%s%s%s'?)", dpath,
					    dprefix, *dprefix ? "." : "", near);
			else
				conf_err_at(L, k->start_mark, "unknown key '%.200s'", dpath);
			continue;
		}
		size_t idx = (size_t)(s - conf_settings);
		if (sc->seen[idx]) {
			conf_err_at(L, k->start_mark, "duplicate key '%s'", dpath);
			continue;
		}
		sc->seen[idx] = true;
		sc->marks[idx] = v->start_mark;
		set_value(L, s, v, path, dpath, sc);
	}
	check_required(L, prefix, dprefix, map->start_mark, sc);
}

static size_t idx_of(const char *path)
{
	return (size_t)(conf_setting_find(path) - conf_settings);
}

/* Checks that involve more than one key. */

/* Whether two addresses are one endpoint (a wildcard listen host matches loopback). */
static bool same_endpoint(const struct conf_addr *listen, const struct conf_addr *other)
{
	if (!listen->host || !other->host || listen->port != other->port)
		return false;
	if (!strcmp(listen->host, other->host))
		return true;
	bool wildcard = !strcmp(listen->host, "0.0.0.0") || !strcmp(listen->host, "::");
	bool loopback = !strcmp(other->host, "127.0.0.1") || !strcmp(other->host, "localhost") ||
			!strcmp(other->host, "::1") || !strcmp(other->host, "0.0.0.0");
	return wildcard && loopback;
}

static void cross_checks(struct loader *L, struct conf *c, const struct scope *sc)
{
	size_t i_mode = idx_of("mode"), i_base = idx_of("advertise.base_port");
	if (c->mode == CONF_MODE_GATEWAY && !sc->seen[i_base])
		conf_err_at(L, sc->marks[i_mode], "mode: gateway mode needs advertise.base_port");
	if (c->mode == CONF_MODE_SIDECAR && sc->seen[i_base])
		conf_err_at(L, sc->marks[i_base], "advertise.base_port: only used in gateway mode");

	size_t i_pc = idx_of("limits.max_held_bytes_per_connection"), i_tot = idx_of("limits.max_held_bytes");
	if (c->max_held_bytes_per_connection > c->max_held_bytes)
		conf_err_at(L, sc->seen[i_pc] ? sc->marks[i_pc] : sc->marks[i_tot],
		       "limits.max_held_bytes_per_connection (%" PRId64 ") is larger than limits.max_held_bytes (%" PRId64 ")",
		       c->max_held_bytes_per_connection, c->max_held_bytes);

	size_t i_c1 = idx_of("gate.error_codes.mirror_sync_replication_timeout");
	size_t i_c2 = idx_of("gate.error_codes.not_enough_remote_replicas_after_append");
	if (c->code_mirror_sync_replication_timeout == c->code_not_enough_remote_replicas_after_append)
		conf_err_at(L, sc->seen[i_c2] ? sc->marks[i_c2] : sc->marks[i_c1],
		       "gate.error_codes: the two codes must differ (both are %d)", c->code_mirror_sync_replication_timeout);

	/* a listener that is its own upstream loops forever, connection after connection */
	size_t i_up = idx_of("upstream.broker"), i_adm = idx_of("admin.listen");
	if (same_endpoint(&c->listen_kafka, &c->upstream_broker))
		conf_err_at(L, sc->marks[i_up], "upstream.broker: %s:%d is listen.kafka itself (syncgate would connect to itself)",
		       c->upstream_broker.host, c->upstream_broker.port);
	if (c->admin_listen.port && same_endpoint(&c->listen_kafka, &c->admin_listen))
		conf_err_at(L, sc->marks[i_adm], "admin.listen: %s:%d is also listen.kafka", c->admin_listen.host,
		       c->admin_listen.port);

	size_t i_utls = idx_of("upstream.tls");
	if (!c->upstream_tls.cert != !c->upstream_tls.key)
		conf_err_at(L, sc->marks[i_utls], "upstream.tls: cert and key must be set together");

	size_t i_stls = idx_of("switch.tls"), i_sbase = idx_of("switch.base_port");
	if (!c->switch_tls.cert != !c->switch_tls.key)
		conf_err_at(L, sc->marks[i_stls], "switch.tls: cert and key must be set together");
	if (c->switch_base_port > 0 && !c->switch_host && c->listen_kafka.host) {
		const char *h = c->listen_kafka.host;
		if (!strcmp(h, "0.0.0.0") || !strcmp(h, "::") || !*h)
			conf_err_at(L, sc->marks[i_sbase], "switch.base_port: listen.kafka is a wildcard address; "
				    "set switch.host to the host clients reach this sidecar at");
		else if (!(c->switch_host = strdup(h)))
			conf_err_at(L, sc->marks[i_sbase], "out of memory");
	}
	if (c->mode == CONF_MODE_GATEWAY && c->switch_base_port > 0 && c->switch_base_port == c->advertise_base_port)
		conf_err_at(L, sc->marks[i_sbase], "switch.base_port: the same as advertise.base_port (%d)",
			    c->advertise_base_port);

	/* default: sidecar "{host}:<listen port>"; gateway: the listen host when
	 * it is a real address (the port is base_port + id either way) */
	if (!c->advertise_template && c->listen_kafka.host) {
		const char *h = c->listen_kafka.host;
		bool wildcard = !strcmp(h, "0.0.0.0") || !strcmp(h, "::") || !*h;
		int rc = c->mode == CONF_MODE_GATEWAY && !wildcard
				 ? asprintf(&c->advertise_template, strchr(h, ':') ? "[%s]" : "%s", h)
				 : asprintf(&c->advertise_template, "{host}:%d", c->listen_kafka.port);
		if (rc < 0)
			c->advertise_template = NULL;
	}
}

static struct conf *load_buffer(const char *name, const unsigned char *buf, size_t len, struct conf_errors *errs)
{
	struct loader L = { .errs = errs };
	if (!errs->path)
		errs->path = strdup(name);
	yaml_parser_t p;
	yaml_document_t doc;
	if (!yaml_parser_initialize(&p)) {
		conf_errors_add(errs, 0, 0, "out of memory");
		return NULL;
	}
	yaml_parser_set_input_string(&p, buf, len);
	if (!yaml_parser_load(&p, &doc)) {
		char ctx[200] = "";
		if (p.context)
			snprintf(ctx, sizeof(ctx), " (%s at line %zu, column %zu)", p.context, p.context_mark.line + 1,
				 p.context_mark.column + 1);
		conf_errors_add(errs, (int)p.problem_mark.line + 1, (int)p.problem_mark.column + 1,
				"YAML syntax error: %s%s", p.problem ? p.problem : "unknown", ctx);
		yaml_parser_delete(&p);
		return NULL;
	}
	L.doc = &doc;
	yaml_document_t doc2;
	if (yaml_parser_load(&p, &doc2)) {
		yaml_node_t *r2 = yaml_document_get_root_node(&doc2);
		if (r2)
			conf_err_at(&L, r2->start_mark, "only one YAML document is allowed");
		yaml_document_delete(&doc2);
	} else {
		conf_errors_add(errs, (int)p.problem_mark.line + 1, (int)p.problem_mark.column + 1,
				"YAML syntax error: %s", p.problem ? p.problem : "unknown");
		L.nerrs++;
	}
	yaml_parser_delete(&p);

	struct conf *c = calloc(1, sizeof(*c));
	bool *seen = calloc(conf_nsettings, sizeof(*seen));
	yaml_mark_t *marks = calloc(conf_nsettings, sizeof(*marks));
	if (!c || !seen || !marks || !(c->path = strdup(name))) {
		conf_errors_add(errs, 0, 0, "out of memory");
		free(seen);
		free(marks);
		conf_free(c);
		yaml_document_delete(&doc);
		return NULL;
	}
	struct scope sc = { seen, marks, c };
	apply_defaults(&L, c, false);
	yaml_node_t *root = yaml_document_get_root_node(&doc);
	yaml_mark_t start = { 0, 0, 0 };
	char g[80];
	if (!root || is_null(root)) {
		if (root)
			start = root->start_mark;
		check_required(&L, "", "", start, &sc);
	} else if (root->type != YAML_MAPPING_NODE) {
		conf_err_at(&L, root->start_mark, "expected a mapping of settings at the top level, got %s", got(root, g, sizeof(g)));
	} else {
		start = root->start_mark;
		walk_map(&L, root, "", "", &sc);
	}
	/* marks of settings never seen point at the document start */
	for (size_t i = 0; i < conf_nsettings; i++)
		if (!seen[i])
			marks[i] = start;
	if (L.nerrs == 0)
		cross_checks(&L, c, &sc);
	free(seen);
	free(marks);
	yaml_document_delete(&doc);
	if (L.nerrs > 0) {
		conf_free(c);
		return NULL;
	}
	return c;
}

struct conf *conf_load_string(const char *name, const char *yaml, size_t len, struct conf_errors *errs)
{
	struct conf_errors local = { 0 };
	struct conf_errors *e = errs ? errs : &local;
	struct conf *c = load_buffer(name ? name : "config", (const unsigned char *)yaml, len, e);
	if (!errs || (c && e->n == 0))
		conf_errors_free(e); /* success leaves nothing for the caller to free */
	return c;
}

struct conf *conf_load(const char *path, struct conf_errors *errs)
{
	struct conf_errors local = { 0 };
	struct conf_errors *e = errs ? errs : &local;
	struct conf *c = NULL;
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	size_t n = 0;
	if (f) {
		buf = malloc(CONF_FILE_MAX + 1);
		if (buf)
			n = fread(buf, 1, CONF_FILE_MAX + 1, f);
	}
	if (!e->path)
		e->path = strdup(path);
	if (!f)
		conf_errors_add(e, 0, 0, "cannot read configuration: %s", strerror(errno));
	else if (!buf)
		conf_errors_add(e, 0, 0, "out of memory");
	else if (ferror(f))
		conf_errors_add(e, 0, 0, "cannot read configuration: %s", strerror(errno));
	else if (n > CONF_FILE_MAX)
		conf_errors_add(e, 0, 0, "configuration file larger than 16 MiB");
	else
		c = load_buffer(path, (unsigned char *)buf, n, e);
	if (f)
		fclose(f);
	free(buf);
	if (!errs || (c && e->n == 0))
		conf_errors_free(e); /* success leaves nothing for the caller to free */
	return c;
}
