/*
 * Fuzz codec_sasl_username and codec_sasl_authenticate_bytes. Input: byte 0
 * picks the mechanism (and the SaslAuthenticate version), byte 1 where the
 * body is cut, the rest is a SaslAuthenticate body and, whole, a raw token.
 * A name found is non-empty, NUL-terminated within the buffer and free of
 * NUL and (for SCRAM) of the ',' that ends it unescaped.
 */
#include "fuzz.h"

static const char *const mechs[] = { "PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "OAUTHBEARER", "GSSAPI" };

static void check_name(const char *mech, const uint8_t *tok, size_t n)
{
	char out[16]; /* small: names longer than it must be refused, not cut */
	if (codec_sasl_username(mech, tok, n, out, sizeof(out)) == 0) {
		size_t len = strnlen(out, sizeof(out));
		if (len == 0 || len >= sizeof(out))
			abort();
	} else if (out[0] != '\0') {
		abort(); /* nothing half-written */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 2)
		return 0;
	struct codec_iov iov[2];
	int16_t v = fuzz_input(data, size, 0, 2, iov);
	const char *mech = mechs[data[0] % (sizeof(mechs) / sizeof(mechs[0]))];
	check_name(mech, data + 2, size - 2);
	uint8_t tok[256];
	size_t n = 0;
	if (codec_sasl_authenticate_bytes(iov, 2, v, tok, sizeof(tok), &n) == CODEC_OK)
		check_name(mech, tok, n);
	else if (n != 0)
		abort();
	return 0;
}
