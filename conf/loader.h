/*
 * loader.h — what conf/load.c and conf/load_lists.c share while they walk
 * one YAML document (libyaml document API): the loader, its error sink and
 * small node helpers. Private to conf/.
 */
#ifndef SYNCGATE_CONF_LOADER_H
#define SYNCGATE_CONF_LOADER_H

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

#include "conf/conf.h"

struct loader {
	struct conf_errors *errs;
	yaml_document_t *doc;
	size_t nerrs;            /* errors added by this load */
};

/** Add `file:line:col: message` (at mark `m`) to L's errors; never stops the walk. */
void conf_err_at(struct loader *L, yaml_mark_t m, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static inline yaml_node_t *node_at(struct loader *L, int i)
{
	return yaml_document_get_node(L->doc, i);
}

static inline const char *scalar(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

static inline bool is_plain(const yaml_node_t *n)
{
	return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}

static inline bool is_null(const yaml_node_t *n)
{
	if (!is_plain(n))
		return false;
	const char *v = scalar(n);
	return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") || !strcmp(v, "NULL");
}

/* What a node is, for "expected X, got Y". Never used on secret values. */
static inline const char *got(const yaml_node_t *n, char *buf, size_t len)
{
	switch (n->type) {
	case YAML_MAPPING_NODE: return "a mapping";
	case YAML_SEQUENCE_NODE: return "a list";
	case YAML_SCALAR_NODE:
		if (is_null(n))
			return "an empty value";
		snprintf(buf, len, "'%.60s%s'", scalar(n), strlen(scalar(n)) > 60 ? "..." : "");
		return buf;
	default: return "nothing";
	}
}

/* The field of setting `s` in `base` (struct conf or struct conf_mirror). */
static inline void *field(void *base, const struct conf_setting *s)
{
	return (char *)base + s->offset;
}

/* load_lists.c: list- and map-valued settings (CONF_T_REGEXES, CONF_T_PROPS,
 * CONF_T_NODES); each sets the field and its count, errors go to L. */
void conf_set_regexes(struct loader *L, const struct conf_setting *s, yaml_node_t *v, const char *dpath, void *base);
void conf_set_props(struct loader *L, const struct conf_setting *s, yaml_node_t *v, const char *dpath, void *base);
void conf_set_nodes(struct loader *L, const struct conf_setting *s, yaml_node_t *v, const char *dpath, void *base);

/* conf.c: frees what one mirror's settings own (not `mi` itself). */
void conf_mirror_free_fields(struct conf_mirror *mi);

#endif
