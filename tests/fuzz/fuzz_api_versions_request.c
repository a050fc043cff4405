/* Fuzz codec_api_versions_request_decode/encode. */
#include "fuzz.h"

FUZZ_MESSAGE(struct codec_api_versions_request, codec_api_versions_request, 0, CODEC_API_VERSIONS_MAX)
