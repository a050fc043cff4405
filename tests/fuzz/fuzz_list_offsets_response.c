/* Fuzz codec_list_offsets_response_decode/encode. */
#include "fuzz.h"

FUZZ_MESSAGE(struct codec_list_offsets_response, codec_list_offsets_response, 1, 11)
