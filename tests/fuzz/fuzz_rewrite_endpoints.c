/*
 * Fuzz codec_response_rewrite_endpoints over every api that carries
 * addresses. Byte 0 picks the api (b0 % 7) and the version (b0 / 7). A changed splice must lie inside the
 * body.
 */
#include "fuzz.h"

static const int16_t apis[][3] = {
	{CODEC_API_METADATA, 0, 13},     {CODEC_API_FIND_COORDINATOR, 0, 6},
	{CODEC_API_DESCRIBE_CLUSTER, 0, 2}, {CODEC_API_PRODUCE, 10, 14},
	{CODEC_API_FETCH, 16, 18},       {CODEC_API_SHARE_FETCH, 1, 2},
	{CODEC_API_SHARE_ACKNOWLEDGE, 1, 2},
};

static int map_fn(void *ctx, int32_t node_id, const char *host, int32_t port, const char **out_host,
		  int32_t *out_port)
{
	if (node_id % 5 == 4)
		return -1;
	*out_host = "sg.local";
	*out_port = 19092;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct codec_iov iov[2];
	struct codec_splice s;
	if (size < 2)
		return 0;
	const size_t napis = sizeof(apis) / sizeof(apis[0]);
	const int16_t *a = apis[data[0] % napis];
	fuzz_input(data, size, 0, 0, iov);
	int16_t v = (int16_t)(a[1] + (data[0] / napis) % (size_t)(a[2] - a[1] + 1));
	if (codec_response_rewrite_endpoints(a[0], v, iov, 2, map_fn, NULL, &s) == CODEC_OK && s.changed) {
		size_t len = size - 2;
		if (s.off > len || s.del > len - s.off)
			abort();
	}
	codec_buf_free(&s.ins);
	return 0;
}
