/* Fuzz codec_describe_cluster_response_decode/encode. */
#include "fuzz.h"

FUZZ_MESSAGE(struct codec_describe_cluster_response, codec_describe_cluster_response, 0, 2)
