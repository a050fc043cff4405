/* Fuzz codec_api_versions_response_decode/encode. */
#include "fuzz.h"

FUZZ_MESSAGE(struct codec_api_versions_response, codec_api_versions_response, 0, CODEC_API_VERSIONS_MAX)
