/* Fuzz codec_end_txn_response_decode/encode. */
#include "fuzz.h"

FUZZ_MESSAGE(struct codec_end_txn_response, codec_end_txn_response, 0, 5)
