/*
 * topics.c — the destination topic name of a source topic (config
 * topic_name). Which topics a mirror wants SYNC (sync_topics) is conf/'s
 * (conf_mirror_sync_topics_compile()). Any thread.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mirror/internal.h"

char *mirror_destination_topic(const char *pattern, const char *source_topic)
{
	static const char key[] = CONF_TOPIC_KEY;
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
