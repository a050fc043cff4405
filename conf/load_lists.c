/*
 * load_lists.c — settings whose value is a list or a mapping: regular
 * expression lists (sync_topics, consumers.exempt_*), librdkafka property
 * maps (source.properties, mirrors[].properties; secrets resolved) and the
 * advertise.nodes map. Called by load.c's walk; errors as `file:line:col`.
 */
#include <errno.h>
#include <inttypes.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "conf/loader.h"

void conf_set_regexes(struct loader *L, const struct conf_setting *s, yaml_node_t *v, const char *dpath,
			void *base)
{
	char g[80];
	if (is_null(v))
		return;
	if (v->type != YAML_SEQUENCE_NODE) {
		conf_err_at(L, v->start_mark, "%s: expected a list of regular expressions, got %s", dpath, got(v, g, sizeof(g)));
		return;
	}
	size_t cnt = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
	char **pats = calloc(cnt + 1, sizeof(*pats));
	regex_t *res = calloc(cnt + 1, sizeof(*res));
	size_t ok = 0;
	if (!pats || !res) {
		free(pats);
		free(res);
		conf_err_at(L, v->start_mark, "out of memory");
		return;
	}
	for (size_t i = 0; i < cnt; i++) {
		yaml_node_t *it = node_at(L, v->data.sequence.items.start[i]);
		if (it->type != YAML_SCALAR_NODE || is_null(it)) {
			conf_err_at(L, it->start_mark, "%s[%zu]: expected a regular expression, got %s", dpath, i, got(it, g, sizeof(g)));
			continue;
		}
		const char *pat = scalar(it);
		char why[160];
		if (conf_topic_regex_compile(&res[ok], pat, why, sizeof(why)) != 0) {
			conf_err_at(L, it->start_mark, "%s[%zu]: invalid regular expression '%.100s': %s", dpath, i, pat, why);
			continue;
		}
		pats[ok] = strdup(pat);
		if (!pats[ok]) {
			regfree(&res[ok]);
			continue;
		}
		ok++;
	}
	*(char ***)field(base, s) = pats;
	*(size_t *)((char *)base + s->count_offset) = ok;
	if (!strcmp(s->path, "mirrors[].sync_groups"))
		((struct conf_mirror *)base)->sync_groups_re = res;
	else if (strncmp(s->path, "mirrors[].", 10) == 0)
		((struct conf_mirror *)base)->sync_topics_re = res;
	else if (!strcmp(s->path, "consumers.exempt_principals"))
		((struct conf *)base)->consumers_exempt_principals_re = res;
	else /* consumers.exempt_client_ids */
		((struct conf *)base)->consumers_exempt_re = res;
}

void conf_set_props(struct loader *L, const struct conf_setting *s, yaml_node_t *v, const char *dpath,
		      void *base)
{
	char g[80];
	if (is_null(v))
		return;
	if (v->type != YAML_MAPPING_NODE) {
		conf_err_at(L, v->start_mark, "%s: expected a mapping of properties, got %s", dpath, got(v, g, sizeof(g)));
		return;
	}
	size_t cnt = (size_t)(v->data.mapping.pairs.top - v->data.mapping.pairs.start);
	struct conf_prop *props = calloc(cnt + 1, sizeof(*props));
	size_t np = 0;
	if (!props) {
		conf_err_at(L, v->start_mark, "out of memory");
		return;
	}
	for (size_t i = 0; i < cnt; i++) {
		yaml_node_t *k = node_at(L, v->data.mapping.pairs.start[i].key);
		yaml_node_t *val = node_at(L, v->data.mapping.pairs.start[i].value);
		if (k->type != YAML_SCALAR_NODE || is_null(k)) {
			conf_err_at(L, k->start_mark, "%s: a property name must be a string, got %s", dpath, got(k, g, sizeof(g)));
			continue;
		}
		const char *name = scalar(k);
		bool dup = false;
		for (size_t j = 0; j < np; j++)
			if (!strcmp(props[j].name, name))
				dup = true;
		if (dup) {
			conf_err_at(L, k->start_mark, "%s: duplicate property '%s'", dpath, name);
			continue;
		}
		if (!strcmp(name, "bootstrap.servers")) {
			conf_err_at(L, k->start_mark, "%s: 'bootstrap.servers' is set by %s", dpath,
			       strncmp(s->path, "mirrors[]", 9) ? "upstream.broker" : "the mirror's 'bootstrap' key");
			continue;
		}
		if (val->type != YAML_SCALAR_NODE || is_null(val)) {
			/* `got` would print the value: say only what kind it is */
			conf_err_at(L, val->start_mark, "%s.%s: expected a string, number or boolean, got %s", dpath, name,
			       val->type == YAML_SCALAR_NODE ? "an empty value" : got(val, g, sizeof(g)));
			continue;
		}
		char why[512];
		bool secret = false;
		char *value = conf_secrets_expand(scalar(val), &secret, why, sizeof(why));
		if (!value) {
			conf_err_at(L, val->start_mark, "%s.%s: %s", dpath, name, why);
			continue;
		}
		props[np].name = strdup(name);
		props[np].value = value;
		props[np].secret = secret || conf_prop_name_sensitive(name);
		np++;
	}
	*(struct conf_prop **)field(base, s) = props;
	*(size_t *)((char *)base + s->count_offset) = np;
}

void conf_set_nodes(struct loader *L, const struct conf_setting *s, yaml_node_t *v, const char *dpath,
		      void *base)
{
	char g[80];
	if (is_null(v))
		return;
	if (v->type != YAML_MAPPING_NODE) {
		conf_err_at(L, v->start_mark, "%s: expected a mapping of node id to host:port, got %s", dpath, got(v, g, sizeof(g)));
		return;
	}
	size_t cnt = (size_t)(v->data.mapping.pairs.top - v->data.mapping.pairs.start);
	struct conf_advertise_node *nodes = calloc(cnt + 1, sizeof(*nodes));
	size_t nn = 0;
	if (!nodes) {
		conf_err_at(L, v->start_mark, "out of memory");
		return;
	}
	for (size_t i = 0; i < cnt; i++) {
		yaml_node_t *k = node_at(L, v->data.mapping.pairs.start[i].key);
		yaml_node_t *val = node_at(L, v->data.mapping.pairs.start[i].value);
		char *end;
		errno = 0;
		long long id = is_plain(k) ? strtoll(scalar(k), &end, 10) : -1;
		if (!is_plain(k) || !*scalar(k) || *end || errno || id < 0 || id > INT32_MAX) {
			conf_err_at(L, k->start_mark, "%s: expected a node id (0..2147483647), got %s", dpath, got(k, g, sizeof(g)));
			continue;
		}
		bool dup = false;
		for (size_t j = 0; j < nn; j++)
			if (nodes[j].node_id == (int32_t)id)
				dup = true;
		if (dup) {
			conf_err_at(L, k->start_mark, "%s: duplicate node id %lld", dpath, id);
			continue;
		}
		if (val->type != YAML_SCALAR_NODE || is_null(val)) {
			conf_err_at(L, val->start_mark, "%s.%lld: expected a host:port, got %s", dpath, id, got(val, g, sizeof(g)));
			continue;
		}
		const char *why = conf_addr_parse(scalar(val), false, &nodes[nn].addr);
		if (why) {
			conf_err_at(L, val->start_mark, "%s.%lld: invalid address '%.100s': %s", dpath, id, scalar(val), why);
			continue;
		}
		nodes[nn++].node_id = (int32_t)id;
	}
	*(struct conf_advertise_node **)field(base, s) = nodes;
	*(size_t *)((char *)base + s->count_offset) = nn;
}
