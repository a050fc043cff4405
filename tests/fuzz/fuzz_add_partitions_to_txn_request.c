/* Fuzz codec_add_partitions_to_txn_request_decode/encode. */
#include "fuzz.h"

FUZZ_MESSAGE(struct codec_add_partitions_to_txn_request, codec_add_partitions_to_txn_request, 0, 3)
