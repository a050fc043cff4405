/* Fuzz codec_list_offsets_request_decode/encode. */
#include "fuzz.h"

FUZZ_MESSAGE(struct codec_list_offsets_request, codec_list_offsets_request, 1, 11)
