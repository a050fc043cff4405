/* tests/codec/test_sasl.c — the user name in a client's first SASL message. */
#include "codec/codec.h"

#include <criterion/criterion.h>
#include <criterion/new/assert.h>
#include <string.h>

static const struct sasl_case {
	const char *name, *mechanism;
	const char *auth;
	size_t len;
	const char *want; /* NULL: -1 */
} cases[] = {
	{ "plain", "PLAIN", "\0mm2\0secret", 11, "mm2" },
	{ "plain, authzid equal", "plain", "mm2\0mm2\0secret", 14, "mm2" },
	{ "plain, authzid other: Kafka refuses it", "PLAIN", "admin\0mm2\0secret", 16, NULL },
	{ "plain, empty user", "PLAIN", "\0\0secret", 8, NULL },
	{ "plain, no password separator", "PLAIN", "\0mm2", 4, NULL },
	{ "scram client-first", "SCRAM-SHA-256", "n,,n=mm2,r=abc", 14, "mm2" },
	{ "scram-512, authzid in the gs2 header", "SCRAM-SHA-512", "n,a=mm2,n=mm2,r=x", 17, "mm2" },
	{ "scram escapes", "SCRAM-SHA-256", "n,,n=a=2Cb=3Dc,r=x", 18, "a,b=c" },
	{ "scram bad escape", "SCRAM-SHA-256", "n,,n=a=2Xb,r=x", 14, NULL },
	{ "scram client-final: no user", "SCRAM-SHA-256", "c=biws,r=abc,p=xyz", 18, NULL },
	{ "scram without nonce", "SCRAM-SHA-256", "n,,n=mm2", 8, NULL },
	{ "other mechanism", "OAUTHBEARER", "n,,\1auth=Bearer x\1\1", 19, NULL },
	{ "gssapi", "GSSAPI", "\0mm2\0x", 6, NULL },
};

Test(codec, sasl_username_table)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct sasl_case *t = &cases[i];
		char out[64];
		int rc = codec_sasl_username(t->mechanism, (const uint8_t *)t->auth, t->len, out, sizeof(out));
		if (t->want) {
			cr_expect(eq(i64, (int64_t)(rc), (int64_t)(0)), "%s", t->name);
			cr_expect_str_eq(out, t->want, "%s", t->name);
		} else {
			cr_expect(eq(i64, (int64_t)(rc), (int64_t)(-1)), "%s", t->name);
			cr_expect_str_eq(out, "", "%s: nothing written", t->name);
		}
	}
}

Test(codec, sasl_username_longer_than_the_buffer)
{
	char out[4];
	cr_expect(eq(i64, (int64_t)(codec_sasl_username("PLAIN", (const uint8_t *)"\0abcd\0p", 7, out, sizeof(out))), (int64_t)(-1)));
	cr_expect(eq(i64, (int64_t)(codec_sasl_username("SCRAM-SHA-256", (const uint8_t *)"n,,n=abcd,r=x", 13, out, sizeof(out))), (int64_t)(-1)));
	cr_expect(eq(i64, (int64_t)(codec_sasl_username("PLAIN", (const uint8_t *)"\0abc\0p", 6, out, sizeof(out))), (int64_t)(0)));
	cr_expect_str_eq(out, "abc");
}

Test(codec, sasl_authenticate_bytes_classic_and_compact)
{
	const uint8_t v1[] = { 0, 0, 0, 5, 'h', 'e', 'l', 'l', 'o' };
	const uint8_t v2[] = { 6, 'h', 'e', 'l', 'l', 'o', 0 /* tags */ };
	uint8_t out[16];
	size_t n;
	struct codec_iov a = { v1, sizeof(v1) }, b = { v2, sizeof(v2) };
	cr_assert(eq(i64, (int64_t)(codec_sasl_authenticate_bytes(&a, 1, 1, out, sizeof(out), &n)), (int64_t)(CODEC_OK)));
	cr_expect(eq(i64, (int64_t)(n), (int64_t)(5)));
	cr_expect(eq(i64, (int64_t)(memcmp(out, "hello", 5)), (int64_t)(0)));
	cr_assert(eq(i64, (int64_t)(codec_sasl_authenticate_bytes(&b, 1, 2, out, sizeof(out), &n)), (int64_t)(CODEC_OK)));
	cr_expect(eq(i64, (int64_t)(n), (int64_t)(5)));
	cr_expect(eq(i64, (int64_t)(codec_sasl_authenticate_bytes(&a, 1, 1, out, 4, &n)), (int64_t)(CODEC_ERR_LIMIT)));
	cr_expect(eq(i64, (int64_t)(n), (int64_t)(0)));
	for (size_t cut = 0; cut < sizeof(v1); cut++) { /* every truncated prefix */
		struct codec_iov t = { v1, cut };
		cr_expect(eq(i64, (int64_t)(codec_sasl_authenticate_bytes(&t, 1, 1, out, sizeof(out), &n)), (int64_t)(CODEC_ERR_UNDERFLOW)),
			     "prefix %zu", cut);
	}
}
