/* reload.c — which changed settings need a restart, from the settings table. */
#include "conf/conf.h"

#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

static bool str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && strcmp(a, b) == 0);
}

bool conf_setting_differs(const struct conf_setting *s, const void *a, const void *b)
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
	case CONF_T_REGEXES: {
		size_t n = *(const size_t *)((const char *)a + s->count_offset);
		if (n != *(const size_t *)((const char *)b + s->count_offset))
			return true;
		char *const *x = *(char *const *const *)fa, *const *y = *(char *const *const *)fb;
		for (size_t i = 0; i < n; i++)
			if (!str_eq(x[i], y[i]))
				return true;
		return false;
	}
	case CONF_T_PROPS: {
		size_t n = *(const size_t *)((const char *)a + s->count_offset);
		if (n != *(const size_t *)((const char *)b + s->count_offset))
			return true;
		const struct conf_prop *x = *(const struct conf_prop *const *)fa;
		const struct conf_prop *y = *(const struct conf_prop *const *)fb;
		for (size_t i = 0; i < n; i++)
			if (!str_eq(x[i].name, y[i].name) || !str_eq(x[i].value, y[i].value))
				return true;
		return false;
	}
	default:
		/* the mirror list: per mirror, and live */
		return true;
	}
}

/* Set one setting of `dst` to its value in `src` (deep copy; `dst`'s old value
 * is freed). Only the types restart settings have. Returns -1 on ENOMEM. */
static int keep_old(const struct conf_setting *s, void *dst, const void *src)
{
	char *fd = (char *)dst + s->offset;
	const char *fs = (const char *)src + s->offset;
	switch (s->type) {
	case CONF_T_SECTION:
		if (s->offset != CONF_F_NOOFFSET)
			*(bool *)fd = *(const bool *)fs;
		return 0;
	case CONF_T_STRING: {
		const char *v = *(char *const *)fs;
		char *copy = v ? strdup(v) : NULL;
		if (v && !copy)
			return -1;
		free(*(char **)fd);
		*(char **)fd = copy;
		return 0;
	}
	case CONF_T_INT:
	case CONF_T_ENUM:
		*(int *)fd = *(const int *)fs;
		return 0;
	case CONF_T_INT16:
		*(int16_t *)fd = *(const int16_t *)fs;
		return 0;
	case CONF_T_INT64:
		*(int64_t *)fd = *(const int64_t *)fs;
		return 0;
	case CONF_T_BOOL:
		*(bool *)fd = *(const bool *)fs;
		return 0;
	case CONF_T_ADDR: {
		struct conf_addr *x = (void *)fd;
		const struct conf_addr *y = (const void *)fs;
		char *host = y->host ? strdup(y->host) : NULL;
		if (y->host && !host)
			return -1;
		free(x->host);
		x->host = host;
		x->port = y->port;
		return 0;
	}
	case CONF_T_NODES: {
		size_t n = *(const size_t *)((const char *)src + s->count_offset);
		const struct conf_advertise_node *y = *(const struct conf_advertise_node *const *)fs;
		struct conf_advertise_node *copy = n ? calloc(n, sizeof(*copy)) : NULL;
		if (n && !copy)
			return -1;
		for (size_t i = 0; i < n; i++) {
			copy[i] = y[i];
			if (y[i].addr.host && !(copy[i].addr.host = strdup(y[i].addr.host))) {
				while (i--)
					free(copy[i].addr.host);
				free(copy);
				return -1;
			}
		}
		size_t *dn = (size_t *)((char *)dst + s->count_offset);
		struct conf_advertise_node **x = (struct conf_advertise_node **)fd;
		for (size_t i = 0; i < *dn; i++)
			free((*x)[i].addr.host);
		free(*x);
		*x = copy;
		*dn = n;
		return 0;
	}
	default:
		/* lists, regexes and properties are per mirror and all live */
		return 0;
	}
}

/* The restart settings that differ between `old` and `new_conf`, named into
 * `buf`; with `keep`, each is also set back to its old value in `keep`. */
static ssize_t restart_settings(const struct conf *old, const struct conf *new_conf,
				struct conf *keep, char *buf, size_t n)
{
	size_t count = 0, o = 0;
	if (n)
		buf[0] = 0;
	for (size_t i = 0; i < conf_nsettings; i++) {
		const struct conf_setting *s = &conf_settings[i];
		if ((s->flags & CONF_F_LIVE) || strncmp(s->path, "mirrors[]", 9) == 0)
			continue;
		if (!conf_setting_differs(s, old, new_conf))
			continue;
		count++;
		if (o < n) {
			int w = snprintf(buf + o, n - o, "%s%s", o ? "," : "", s->path);
			o += w > 0 ? (size_t)w : 0;
		}
		if (keep && keep_old(s, keep, old) < 0)
			return -1;
	}
	return (ssize_t)count;
}

size_t conf_reload_check(const struct conf *old, const struct conf *new_conf, char *buf, size_t n)
{
	return (size_t)restart_settings(old, new_conf, NULL, buf, n);
}

ssize_t conf_reload_keep_restart(const struct conf *old, struct conf *new_conf, char *buf, size_t n)
{
	return restart_settings(old, new_conf, new_conf, buf, n);
}
