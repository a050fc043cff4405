/* Fuzz codec_metadata_response_decode/encode. */
#include "fuzz.h"

FUZZ_MESSAGE(struct codec_metadata_response, codec_metadata_response, 0, 13)
