/*
 * mm2_fingerprint.c — the pure half of the `mm2` record match
 * (mirror/mm2_match.h): a record's fingerprint and the in-order match of
 * a source and a destination sequence. The digest is OpenSSL's SHA-256
 * over length-prefixed fields, so no two different field lists hash the
 * same input.
 */
#include <string.h>

#include <openssl/evp.h>

#include "mirror/mm2_match.h"

const char *mirror_match_stop_str(enum mirror_match_stop s)
{
	static const char *const names[MIRROR_MATCH_STOP_COUNT] = { "more", "gap", "foreign" };
	return (unsigned)s < MIRROR_MATCH_STOP_COUNT ? names[s] : "?";
}

/* A field: its length as 8 bytes big endian (all ones for null), then its bytes. */
static int put(EVP_MD_CTX *c, const void *p, size_t n, int null)
{
	unsigned char len[8];
	uint64_t v = null ? UINT64_MAX : (uint64_t)n;
	for (int i = 7; i >= 0; i--, v >>= 8)
		len[i] = (unsigned char)v;
	return EVP_DigestUpdate(c, len, sizeof(len)) && (null || n == 0 || EVP_DigestUpdate(c, p, n));
}

int mirror_mm2_fingerprint(const rd_kafka_message_t *m, unsigned char fp[MIRROR_MFP_LEN])
{
	static __thread EVP_MD_CTX *ctx; /* per thread, reused (freed with the process) */
	if (!ctx && !(ctx = EVP_MD_CTX_new()))
		return -1;
	rd_kafka_timestamp_type_t tstype;
	int64_t ts = rd_kafka_message_timestamp(m, &tstype);
	unsigned char tsb[8];
	for (int i = 7; i >= 0; i--, ts = (int64_t)((uint64_t)ts >> 8))
		tsb[i] = (unsigned char)ts;
	int ok = EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) && put(ctx, m->key, m->key_len, !m->key) &&
		 put(ctx, m->payload, m->len, !m->payload) && EVP_DigestUpdate(ctx, tsb, sizeof(tsb));
	rd_kafka_headers_t *hdrs = NULL;
	size_t nh = 0;
	if (ok && rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR && hdrs)
		nh = rd_kafka_header_cnt(hdrs);
	ok = ok && put(ctx, NULL, nh, 0); /* the header count */
	for (size_t i = 0; ok && i < nh; i++) {
		const char *name;
		const void *val;
		size_t vlen;
		if (rd_kafka_header_get_all(hdrs, i, &name, &val, &vlen) != RD_KAFKA_RESP_ERR_NO_ERROR)
			return -1;
		ok = put(ctx, name, strlen(name), 0) && put(ctx, val, vlen, !val);
	}
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	if (!ok || !EVP_DigestFinal_ex(ctx, md, &mdlen) || mdlen < MIRROR_MFP_LEN)
		return -1;
	memcpy(fp, md, MIRROR_MFP_LEN);
	return 0;
}

static int same(const struct mirror_mrec *a, const struct mirror_mrec *b)
{
	return memcmp(a->fp, b->fp, MIRROR_MFP_LEN) == 0;
}

enum mirror_match_stop mirror_mm2_match(const struct mirror_mrec *src, size_t ns, const struct mirror_mrec *dst,
					size_t nd, size_t *si, size_t *di, size_t recopy_window, size_t *at)
{
	while (*si < ns && *di < nd) {
		const struct mirror_mrec *d = &dst[*di];
		if (same(&src[*si], d)) {
			if (at)
				at[*si] = *di;
			(*si)++;
			(*di)++;
			continue;
		}
		/* not the next source record: a re-copy of a matched one? */
		size_t lo = *si > recopy_window ? *si - recopy_window : 0;
		size_t k = *si;
		while (k > lo && !same(&src[k - 1], d))
			k--;
		if (k > lo) {
			(*di)++;
			continue;
		}
		for (k = *si + 1; k < ns; k++)
			if (same(&src[k], d))
				return MIRROR_MATCH_GAP;
		return MIRROR_MATCH_FOREIGN;
	}
	return MIRROR_MATCH_MORE;
}
