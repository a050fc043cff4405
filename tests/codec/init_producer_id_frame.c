/*
 * init-producer-id-frame VERSION — print, as hex, the InitProducerId frame a
 * switched sidecar sends its broker (codec_init_producer_id_request_frame,
 * correlation id 1, ClientId "syncgate", TransactionTimeoutMs INT32_MAX),
 * so tests/integration/test_init_producer_id.py can send it to a real broker.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "codec/codec.h"

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: %s VERSION\n", argv[0]);
		return 2;
	}
	struct codec_buf b;
	codec_buf_init(&b, 1024);
	if (codec_init_producer_id_request_frame((int16_t)atoi(argv[1]), 1, "syncgate", NULL, INT32_MAX, &b) < 0) {
		fprintf(stderr, "version %s: not encodable\n", argv[1]);
		return 1;
	}
	for (size_t i = 0; i < b.len; i++)
		printf("%02x", b.data[i]);
	printf("\n");
	codec_buf_free(&b);
	return 0;
}
