/* metrics.c — label helpers for the mirror metric families. Any thread. */
#include <stdio.h>

#include "mirror/internal.h"

void mirror_label_escape(char *dst, size_t cap, const char *src)
{
	size_t o = 0;
	for (; src && *src && o + 3 < cap; src++) {
		char c = *src;
		if (c == '\\' || c == '"') {
			dst[o++] = '\\';
			dst[o++] = c;
		} else if (c == '\n') {
			dst[o++] = '\\';
			dst[o++] = 'n';
		} else {
			dst[o++] = c;
		}
	}
	dst[o] = '\0';
}

struct metric *mirror_metric_mt(enum metric_type type, const char *name, const char *help,
				const char *mirror, const char *topic)
{
	char m[160], t[300], labels[512];
	mirror_label_escape(m, sizeof(m), mirror);
	if (topic) {
		mirror_label_escape(t, sizeof(t), topic);
		snprintf(labels, sizeof(labels), "mirror=\"%s\",topic=\"%s\"", m, t);
	} else {
		snprintf(labels, sizeof(labels), "mirror=\"%s\"", m);
	}
	return metric_get(type, name, help, labels, NULL, 0);
}
