/* Fuzz codec_init_producer_id_response_decode/encode. */
#include "fuzz.h"

FUZZ_MESSAGE(struct codec_init_producer_id_response, codec_init_producer_id_response, 0, 5)
