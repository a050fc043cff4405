/* secrets.c — `${file:PATH}` and `${env:NAME}` references in values. */
#include "conf/conf.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SECRET_FILE_MAX (64 * 1024) /* a password or token, not a bundle */

/* Read a whole secret file; strips one trailing "\n" (or "\r\n"). */
static char *read_secret_file(const char *path, size_t *len, char *err, size_t errn)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		snprintf(err, errn, "cannot read secret file '%s': %s", path, strerror(errno));
		return NULL;
	}
	char *buf = malloc(SECRET_FILE_MAX + 1);
	if (!buf) {
		fclose(f);
		snprintf(err, errn, "out of memory");
		return NULL;
	}
	size_t n = fread(buf, 1, SECRET_FILE_MAX + 1, f);
	bool bad = ferror(f);
	fclose(f);
	if (bad || n > SECRET_FILE_MAX) {
		explicit_bzero(buf, SECRET_FILE_MAX + 1);
		free(buf);
		snprintf(err, errn, bad ? "cannot read secret file '%s'" : "secret file '%s' is larger than 64 KiB", path);
		return NULL;
	}
	if (n > 0 && buf[n - 1] == '\n')
		n--;
	if (n > 0 && buf[n - 1] == '\r')
		n--;
	if (memchr(buf, 0, n)) {
		explicit_bzero(buf, SECRET_FILE_MAX + 1);
		free(buf);
		snprintf(err, errn, "secret file '%s' contains a NUL byte", path);
		return NULL;
	}
	buf[n] = 0;
	*len = n;
	return buf;
}

char *conf_secrets_expand(const char *in, bool *secret, char *err, size_t errn)
{
	size_t cap = strlen(in) + 1, len = 0;
	char *out = malloc(cap);
	if (!out) {
		snprintf(err, errn, "out of memory");
		return NULL;
	}
	*secret = false;
	const char *p = in;
	while (*p) {
		const char *ref = strstr(p, "${");
		size_t lit = ref ? (size_t)(ref - p) : strlen(p);
		const char *val = NULL;
		char *owned = NULL;
		size_t vlen = 0;
		const char *next = p + lit;
		if (ref) {
			const char *end = strchr(ref, '}');
			if (!end) {
				snprintf(err, errn, "unterminated '${' (expected ${file:PATH} or ${env:NAME})");
				goto fail;
			}
			const char *body = ref + 2;
			int blen = (int)(end - body);
			if (strncmp(body, "file:", 5) == 0 && blen > 5) {
				char *path = strndup(body + 5, (size_t)blen - 5);
				if (!path) {
					snprintf(err, errn, "out of memory");
					goto fail;
				}
				owned = read_secret_file(path, &vlen, err, errn);
				free(path);
				if (!owned)
					goto fail;
				val = owned;
			} else if (strncmp(body, "env:", 4) == 0 && blen > 4) {
				char name[256];
				snprintf(name, sizeof(name), "%.*s", blen - 4, body + 4);
				val = getenv(name);
				if (!val) {
					snprintf(err, errn, "environment variable '%s' is not set", name);
					goto fail;
				}
				vlen = strlen(val);
			} else {
				snprintf(err, errn, "unknown reference '${%.*s}' (expected ${file:PATH} or ${env:NAME})",
					 blen > 64 ? 64 : blen, body);
				goto fail;
			}
			*secret = true;
			next = end + 1;
		}
		if (len + lit + vlen + 1 > cap) {
			size_t ncap = (len + lit + vlen + 1) * 2;
			char *np = malloc(ncap);
			if (!np) {
				if (owned) explicit_bzero(owned, vlen);
				free(owned);
				snprintf(err, errn, "out of memory");
				goto fail;
			}
			memcpy(np, out, len);
			explicit_bzero(out, cap);
			free(out);
			out = np;
			cap = ncap;
		}
		memcpy(out + len, p, lit);
		len += lit;
		if (val) {
			memcpy(out + len, val, vlen);
			len += vlen;
		}
		if (owned) {
			explicit_bzero(owned, vlen);
			free(owned);
		}
		p = next;
	}
	out[len] = 0;
	return out;
fail:
	explicit_bzero(out, cap);
	free(out);
	return NULL;
}

bool conf_prop_name_sensitive(const char *name)
{
	static const char *const words[] = { "password", "secret", "jaas", "ssl.key.pem",
					     "sasl.oauthbearer.config", NULL };
	for (size_t i = 0; words[i]; i++)
		if (strcasestr(name, words[i]))
			return true;
	return false;
}
