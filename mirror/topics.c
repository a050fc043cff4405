/*
 * topics.c — which source topics a mirror wants SYNC (config sync_topics:
 * POSIX extended regexes matched against the WHOLE topic name) and the
 * destination topic name of a source topic (config topic_name).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mirror/internal.h"

int mirror_regex_compile(const struct conf_mirror *cm, regex_t **out, size_t *nout)
{
	*out = NULL;
	*nout = 0;
	if (cm->nsync_topics == 0)
		return 0;
	regex_t *re = calloc(cm->nsync_topics, sizeof(*re));
	if (!re)
		return -1;
	for (size_t i = 0; i < cm->nsync_topics; i++) {
		size_t n = strlen(cm->sync_topics[i]) + 5;
		char *anch = malloc(n);
		if (!anch) {
			mirror_regex_free(re, i);
			return -1;
		}
		snprintf(anch, n, "^(%s)$", cm->sync_topics[i]);
		int rc = regcomp(&re[i], anch, REG_EXTENDED | REG_NOSUB);
		free(anch);
		if (rc != 0) {
			char err[128];
			regerror(rc, &re[i], err, sizeof(err));
			LOG_E("mirror_sync_topics_invalid", "mirror=%s pattern=\"%s\" reason=\"%s\"",
			      cm->name, cm->sync_topics[i], err);
			mirror_regex_free(re, i);
			return -1;
		}
	}
	*out = re;
	*nout = cm->nsync_topics;
	return 0;
}

void mirror_regex_free(regex_t *re, size_t n)
{
	for (size_t i = 0; i < n; i++)
		regfree(&re[i]);
	free(re);
}

bool mirror_regex_match(const regex_t *re, size_t n, const char *topic)
{
	for (size_t i = 0; i < n; i++)
		if (regexec(&re[i], topic, 0, NULL, 0) == 0)
			return true;
	return false;
}

char *mirror_destination_topic(const char *pattern, const char *source_topic)
{
	static const char key[] = "{topic}";
	const size_t klen = sizeof(key) - 1;
	if (!pattern || !*pattern)
		pattern = key;
	size_t tlen = strlen(source_topic), n = 0;
	for (const char *p = pattern; *p;) {
		if (strncmp(p, key, klen) == 0) {
			n += tlen;
			p += klen;
		} else {
			n++;
			p++;
		}
	}
	char *out = malloc(n + 1), *o = out;
	if (!out)
		return NULL;
	for (const char *p = pattern; *p;) {
		if (strncmp(p, key, klen) == 0) {
			memcpy(o, source_topic, tlen);
			o += tlen;
			p += klen;
		} else {
			*o++ = *p++;
		}
	}
	*o = '\0';
	return out;
}
