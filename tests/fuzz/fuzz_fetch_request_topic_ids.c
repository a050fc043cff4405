/* Fuzz codec_fetch_request_topic_ids: any body, any cut; the ids returned are distinct. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct codec_iov iov[2];
	if (size < 2)
		return 0;
	int16_t v = fuzz_input(data, size, 4, 18, iov);
	uint8_t (*ids)[16] = NULL;
	size_t n = 0;
	if (codec_fetch_request_topic_ids(iov, 2, v, &ids, &n) == CODEC_OK) {
		for (size_t i = 0; i < n; i++)
			for (size_t j = i + 1; j < n; j++)
				if (memcmp(ids[i], ids[j], 16) == 0)
					abort();
	} else if (ids || n) {
		abort(); /* nothing returned on error */
	}
	free(ids);
	return 0;
}
