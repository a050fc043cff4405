/* Fuzz codec_fetch_response_scan: every reported offset lies inside the body. */
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct codec_iov iov[2];
	struct codec_fetch_response_scan s;
	if (size < 2)
		return 0;
	int16_t v = fuzz_input(data, size, 4, 18, iov);
	if (codec_fetch_response_scan(iov, 2, v, &s) == CODEC_OK) {
		for (size_t i = 0; i < s.npartitions; i++)
			if (s.partitions[i].high_watermark_off + 8 > size - 2 ||
			    s.partitions[i].last_stable_offset_off + 8 > size - 2 ||
			    s.partitions[i].topic >= s.ntopics)
				abort();
	}
	codec_fetch_response_scan_free(&s);
	return 0;
}
