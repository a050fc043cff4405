/* Fuzz codec_find_coordinator_response_decode/encode. */
#include "fuzz.h"

FUZZ_MESSAGE(struct codec_find_coordinator_response, codec_find_coordinator_response, 0, 6)
