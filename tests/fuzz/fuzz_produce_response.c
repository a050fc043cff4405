/* Fuzz codec_produce_response_decode/encode. */
#include "fuzz.h"

FUZZ_MESSAGE(struct codec_produce_response, codec_produce_response, 3, 14)
