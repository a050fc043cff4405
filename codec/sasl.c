/*
 * sasl.c — the user name in a client's first SASL message (PLAIN, SCRAM),
 * for consumers.exempt_principals. syncgate never takes part in SASL: it
 * reads what passes through and lets the broker decide. Pure; any thread.
 */
#include <string.h>
#include <strings.h>

#include "codec/codec.h"

/* PLAIN (RFC 4616): authzid NUL authcid NUL passwd. */
static int plain_username(const uint8_t *a, size_t len, char *out, size_t cap)
{
	const uint8_t *nul1 = memchr(a, 0, len);
	if (!nul1)
		return -1;
	const uint8_t *user = nul1 + 1;
	const uint8_t *nul2 = memchr(user, 0, len - (size_t)(user - a));
	if (!nul2)
		return -1;
	size_t zlen = (size_t)(nul1 - a), ulen = (size_t)(nul2 - user);
	if (ulen == 0 || ulen >= cap || (zlen && (zlen != ulen || memcmp(a, user, ulen))))
		return -1; /* Kafka refuses an authzid other than the user */
	memcpy(out, user, ulen);
	out[ulen] = '\0';
	return 0;
}

/* SCRAM client-first (RFC 5802): gs2-cbind-flag "," [authzid] "," "n=" saslname "," "r=" … */
static int scram_username(const uint8_t *a, size_t len, char *out, size_t cap)
{
	size_t i = 0, commas = 0;
	while (i < len && commas < 2) /* skip the gs2 header */
		if (a[i++] == ',')
			commas++;
	if (commas < 2 || len - i < 2 || a[i] != 'n' || a[i + 1] != '=')
		return -1;
	size_t o = 0;
	for (i += 2; i < len && a[i] != ','; i++) {
		char ch = (char)a[i];
		if (ch == '=') { /* saslname escapes: =2C is ',', =3D is '=' */
			if (len - i < 3)
				return -1;
			if (a[i + 1] == '2' && (a[i + 2] == 'C' || a[i + 2] == 'c'))
				ch = ',';
			else if (a[i + 1] == '3' && (a[i + 2] == 'D' || a[i + 2] == 'd'))
				ch = '=';
			else
				return -1;
			i += 2;
		} else if (ch == '\0') {
			return -1;
		}
		if (o + 1 >= cap)
			return -1;
		out[o++] = ch;
	}
	if (o == 0 || i == len) /* no name, or no ",r=" after it */
		return -1;
	out[o] = '\0';
	return 0;
}

int codec_sasl_username(const char *mechanism, const uint8_t *auth, size_t len, char *out, size_t cap)
{
	if (cap)
		out[0] = '\0';
	if (!mechanism || !auth || cap < 2)
		return -1;
	int rc = -1;
	if (!strcasecmp(mechanism, "PLAIN"))
		rc = plain_username(auth, len, out, cap);
	else if (!strcasecmp(mechanism, "SCRAM-SHA-256") || !strcasecmp(mechanism, "SCRAM-SHA-512"))
		rc = scram_username(auth, len, out, cap);
	if (rc != 0)
		out[0] = '\0'; /* nothing half-written */
	return rc;
}

enum codec_err codec_sasl_authenticate_bytes(const struct codec_iov *iov, int niov, int16_t version,
					     uint8_t *out, size_t cap, size_t *n)
{
	struct codec_reader r;
	codec_reader_init(&r, iov, niov);
	r.flexible = version >= 2;
	struct codec_slice s = codec_read_slice(&r, true, false);
	*n = 0;
	if (r.err != CODEC_OK)
		return r.err;
	if ((size_t)s.len > cap)
		return CODEC_ERR_LIMIT;
	codec_reader_seek(&r, s.off);
	codec_read_raw(&r, out, (size_t)s.len);
	if (r.err == CODEC_OK)
		*n = (size_t)s.len;
	return r.err;
}
