/*
 * settings_near.c — the "did you mean" of an unknown configuration key: the
 * known key of the same section within two edits (load.c's hint). Pure.
 */
#include "conf/conf.h"

#include <string.h>

/* Edit distance of a and b (insert, delete, substitute, swap two neighbours:
 * optimal string alignment), or 3 when above 2 or either is too long. */
static int near_distance(const char *a, const char *b)
{
	size_t n = strlen(a), m = strlen(b);
	if (n > 63 || m > 63 || (n > m ? n - m : m - n) > 2)
		return 3;
	int d[64][64];
	for (size_t i = 0; i <= n; i++)
		for (size_t j = 0; j <= m; j++) {
			if (!i || !j) {
				d[i][j] = (int)(i + j);
				continue;
			}
			int sub = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			int del = d[i - 1][j] + 1, ins = d[i][j - 1] + 1;
			int v = sub < del ? sub : del;
			v = v < ins ? v : ins;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < v)
				v = d[i - 2][j - 2] + 1;
			d[i][j] = v;
		}
	return d[n][m] > 2 ? 3 : d[n][m];
}

const char *conf_setting_near(const char *prefix, const char *key)
{
	size_t plen = strlen(prefix), klen = strlen(key);
	const char *best = NULL;
	int best_d = 3;
	for (size_t i = 0; i < conf_nsettings; i++) {
		const char *p = conf_settings[i].path;
		if (plen && (strncmp(p, prefix, plen) != 0 || p[plen] != '.'))
			continue;
		const char *name = plen ? p + plen + 1 : p;
		if (strchr(name, '.'))
			continue; /* not a sibling: deeper */
		int d = near_distance(key, name);
		if (d < best_d && 2 * (size_t)d < klen) /* "foo" is not a typo of "log" */
			best = name, best_d = d;
	}
	return best;
}
