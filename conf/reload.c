/* reload.c — which changed settings need a restart, from the settings table. */
#include "conf/conf.h"

#include <string.h>

static bool str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

/* Whether one setting differs between two bases (struct conf or mirror). */
static bool differs(const struct conf_setting *s, const void *a, const void *b)
{
	const char *fa = (const char *)a + s->offset, *fb = (const char *)b + s->offset;
	switch (s->type) {
	case CONF_T_SECTION:
		return s->offset != CONF_F_NOOFFSET && *(const bool *)fa != *(const bool *)fb;
	case CONF_T_STRING:
		return !str_eq(*(char *const *)fa, *(char *const *)fb);
	case CONF_T_INT:
	case CONF_T_ENUM:
		return *(const int *)fa != *(const int *)fb;
	case CONF_T_INT16:
		return *(const int16_t *)fa != *(const int16_t *)fb;
	case CONF_T_INT64:
		return *(const int64_t *)fa != *(const int64_t *)fb;
	case CONF_T_BOOL:
		return *(const bool *)fa != *(const bool *)fb;
	case CONF_T_ADDR: {
		const struct conf_addr *x = (const void *)fa, *y = (const void *)fb;
		return x->port != y->port || !str_eq(x->host, y->host);
	}
	case CONF_T_NODES: {
		size_t n = *(const size_t *)((const char *)a + s->count_offset);
		if (n != *(const size_t *)((const char *)b + s->count_offset))
			return true;
		const struct conf_advertise_node *x = *(const struct conf_advertise_node *const *)fa;
		const struct conf_advertise_node *y = *(const struct conf_advertise_node *const *)fb;
		for (size_t i = 0; i < n; i++)
			if (x[i].node_id != y[i].node_id || x[i].addr.port != y[i].addr.port ||
			    !str_eq(x[i].addr.host, y[i].addr.host))
				return true;
		return false;
	}
	default:
		/* lists, regexes and properties are per mirror and all live */
		return true;
	}
}

size_t conf_reload_check(const struct conf *old, const struct conf *new_conf, char *buf, size_t n)
{
	size_t count = 0, o = 0;
	if (n)
		buf[0] = 0;
	for (size_t i = 0; i < conf_nsettings; i++) {
		const struct conf_setting *s = &conf_settings[i];
		if ((s->flags & CONF_F_LIVE) || strncmp(s->path, "mirrors[]", 9) == 0)
			continue;
		if (!differs(s, old, new_conf))
			continue;
		count++;
		if (o < n) {
			int w = snprintf(buf + o, n - o, "%s%s", o ? "," : "", s->path);
			o += w > 0 ? (size_t)w : 0;
		}
	}
	return count;
}
