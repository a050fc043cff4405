/*
 * mirrors.c — values derived from a mirror's settings: defaults that depend
 * on other settings (the mm2 offset-syncs topic), the compiled sync_topics,
 * and which settings a mirror worker reads (the table's CONF_F_WORKER).
 * The one owner of each; mirror/ asks here. Any thread.
 */
#include "conf/conf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *conf_mirror_topic_name(const struct conf_mirror *m)
{
	return m->topic_name && *m->topic_name ? m->topic_name : CONF_TOPIC_KEY;
}

char *conf_mirror_offset_syncs_topic(const struct conf_mirror *m)
{
	if (m->mm2_offset_syncs_topic)
		return strdup(m->mm2_offset_syncs_topic);
	char *s = NULL;
	if (asprintf(&s, "mm2-offset-syncs.%s.internal", m->name ? m->name : "") < 0)
		return NULL;
	return s;
}

int conf_mirror_demote_timeout_ms(const struct conf_mirror *m)
{
	return m->sync_topic_demote_timeout_ms > 0 ? m->sync_topic_demote_timeout_ms : CONF_DEMOTE_TIMEOUT_MS;
}

int conf_topic_regex_compile(regex_t *re, const char *pattern, char *why, size_t n)
{
	size_t len = strlen(pattern) + 5;
	char *anchored = malloc(len);
	if (!anchored) {
		snprintf(why, n, "out of memory");
		return REG_ESPACE;
	}
	snprintf(anchored, len, "^(%s)$", pattern);
	int rc = regcomp(re, anchored, REG_EXTENDED | REG_NOSUB);
	free(anchored);
	if (rc != 0)
		regerror(rc, re, why, n);
	return rc;
}

static int compile_list(const char *mirror, char *const *pats, size_t n, const char *what, regex_t **out,
			size_t *nout)
{
	*out = NULL;
	*nout = 0;
	if (n == 0)
		return 0;
	regex_t *re = calloc(n, sizeof(*re));
	if (!re)
		return -1;
	for (size_t i = 0; i < n; i++) {
		char why[128];
		if (conf_topic_regex_compile(&re[i], pats[i], why, sizeof(why)) != 0) {
			LOG_E("mirror_patterns_invalid", "mirror=%s setting=%s pattern=\"%s\" reason=\"%s\"", mirror, what,
			      pats[i], why);
			conf_topic_regexes_free(re, i);
			return -1;
		}
	}
	*out = re;
	*nout = n;
	return 0;
}

int conf_mirror_sync_topics_compile(const struct conf_mirror *m, regex_t **out, size_t *nout)
{
	return compile_list(m->name, m->sync_topics, m->nsync_topics, "sync_topics", out, nout);
}

int conf_mirror_sync_groups_compile(const struct conf_mirror *m, regex_t **out, size_t *nout)
{
	return compile_list(m->name, m->sync_groups, m->nsync_groups, "sync_groups", out, nout);
}

bool conf_topic_regexes_match(const regex_t *re, size_t n, const char *topic)
{
	for (size_t i = 0; re && topic && i < n; i++)
		if (regexec(&re[i], topic, 0, NULL, 0) == 0)
			return true;
	return false;
}

void conf_topic_regexes_free(regex_t *re, size_t n)
{
	for (size_t i = 0; i < n; i++)
		regfree(&re[i]);
	free(re);
}

bool conf_mirror_worker_changed(const struct conf *ca, const struct conf_mirror *a,
				const struct conf *cb, const struct conf_mirror *b)
{
	for (size_t i = 0; i < conf_nsettings; i++) {
		const struct conf_setting *s = &conf_settings[i];
		if (!(s->flags & CONF_F_WORKER))
			continue;
		bool per_mirror = strncmp(s->path, "mirrors[].", 10) == 0;
		if (per_mirror ? conf_setting_differs(s, a, b) : conf_setting_differs(s, ca, cb))
			return true;
	}
	return false;
}
