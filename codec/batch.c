/*
 * batch.c — one RecordBatch (magic 2) in place: CRC-32C, check, producer
 * fields (codec/batch.h). The CRC is Castagnoli's, reflected (polynomial
 * 0x82F63B78), initial and final value all ones, as Kafka computes it over a
 * batch from its attributes to its end.
 */
#include "codec/codec.h"

#include <string.h>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

static uint32_t table[8][256];

/* Slicing-by-8 tables, built before main (no lazy state to race on). */
__attribute__((constructor)) static void table_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
		table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			table[t][i] = (table[t - 1][i] >> 8) ^ table[0][table[t - 1][i] & 0xff];
}

static uint32_t crc_table(uint32_t c, const uint8_t *p, size_t n)
{
	while (n >= 8) {
		uint32_t lo = c ^ ((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
		c = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^
		    table[4][lo >> 24] ^ table[3][p[4]] ^ table[2][p[5]] ^ table[1][p[6]] ^ table[0][p[7]];
		p += 8;
		n -= 8;
	}
	while (n--)
		c = (c >> 8) ^ table[0][(c ^ *p++) & 0xff];
	return c;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static uint32_t crc_hw(uint32_t c, const uint8_t *p, size_t n)
{
	uint64_t c64 = c;
	while (n >= 8) {
		uint64_t v;
		memcpy(&v, p, 8);
		c64 = _mm_crc32_u64(c64, v);
		p += 8;
		n -= 8;
	}
	c = (uint32_t)c64;
	while (n--)
		c = _mm_crc32_u8(c, *p++);
	return c;
}
#endif

uint32_t codec_crc32c(uint32_t crc, const void *buf, size_t n)
{
	uint32_t c = ~crc;
#if defined(__x86_64__)
	if (__builtin_cpu_supports("sse4.2"))
		return ~crc_hw(c, buf, n);
#endif
	return ~crc_table(c, buf, n);
}

uint32_t codec_crc32c_portable(uint32_t crc, const void *buf, size_t n)
{
	return ~crc_table(~crc, buf, n);
}

static uint32_t get_u32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = bytes - 1; i >= 0; i--, v >>= 8)
		p[i] = (uint8_t)v;
}

enum codec_err codec_batch_check(const uint8_t *b, size_t n)
{
	if (n < CODEC_BATCH_HEADER_LEN)
		return CODEC_ERR_UNDERFLOW;
	int32_t len = (int32_t)get_u32(b + CODEC_BATCH_LENGTH_AT);
	if (len < CODEC_BATCH_HEADER_LEN - CODEC_BATCH_LENGTH_AT - 4)
		return CODEC_ERR_BAD_MSG;
	if ((size_t)len + CODEC_BATCH_LENGTH_AT + 4 > n)
		return CODEC_ERR_UNDERFLOW;
	if ((size_t)len + CODEC_BATCH_LENGTH_AT + 4 != n || b[CODEC_BATCH_MAGIC_AT] != 2)
		return CODEC_ERR_BAD_MSG;
	uint32_t want = get_u32(b + CODEC_BATCH_CRC_AT);
	if (codec_crc32c(0, b + CODEC_BATCH_ATTRIBUTES_AT, n - CODEC_BATCH_ATTRIBUTES_AT) != want)
		return CODEC_ERR_BAD_MSG;
	return CODEC_OK;
}

enum codec_err codec_batch_set_producer(uint8_t *b, size_t n, int64_t producer_id, int16_t producer_epoch)
{
	enum codec_err err = codec_batch_check(b, n);
	if (err != CODEC_OK)
		return err;
	put_be(b + CODEC_BATCH_PRODUCER_ID_AT, (uint64_t)producer_id, 8);
	put_be(b + CODEC_BATCH_EPOCH_AT, (uint16_t)producer_epoch, 2);
	put_be(b + CODEC_BATCH_CRC_AT,
	       codec_crc32c(0, b + CODEC_BATCH_ATTRIBUTES_AT, n - CODEC_BATCH_ATTRIBUTES_AT), 4);
	return CODEC_OK;
}
