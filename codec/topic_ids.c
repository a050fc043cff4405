/*
 * TopicIds (KIP-516) in requests: which ids a Fetch v13+ request names, so a
 * proxy can resolve them with its own broker before the response comes, and
 * the Metadata v12 request that asks the broker for topics by id.
 */
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"

#define FETCH_MIN 4
#define FETCH_MAX 18
#define FETCH_TOPIC_IDS 13
#define FETCH_REPLICA_STATE 15

/* Append `id` to *ids unless it is there already (requests name few topics). */
static void add_id(struct codec_reader *r, uint8_t (**ids)[16], size_t *n, size_t *cap, const uint8_t id[16])
{
	for (size_t i = 0; i < *n; i++)
		if (memcmp((*ids)[i], id, 16) == 0)
			return;
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 8;
		uint8_t (*v)[16] = realloc(*ids, c * sizeof(*v));
		if (!v) {
			codec_reader_fail(r, CODEC_ERR_NOMEM);
			return;
		}
		*ids = v;
		*cap = c;
	}
	memcpy((*ids)[(*n)++], id, 16);
}

enum codec_err codec_fetch_request_topic_ids(const struct codec_iov *iov, int niov, int16_t version,
					     uint8_t (**ids)[16], size_t *n)
{
	struct codec_reader r;
	size_t cap = 0;
	*ids = NULL;
	*n = 0;
	if (version < FETCH_MIN || version > FETCH_MAX)
		return CODEC_ERR_UNSUPPORTED;
	if (version < FETCH_TOPIC_IDS)
		return CODEC_OK; /* topics by name */
	codec_reader_init(&r, iov, niov);
	r.flexible = codec_api_flexible(CODEC_API_FETCH, version);
	if (version < FETCH_REPLICA_STATE)
		codec_read_i32(&r); /* ReplicaId */
	codec_read_i32(&r);         /* MaxWaitMs */
	codec_read_i32(&r);         /* MinBytes */
	codec_read_i32(&r);         /* MaxBytes */
	codec_read_i8(&r);          /* IsolationLevel */
	codec_read_i32(&r);         /* SessionId */
	codec_read_i32(&r);         /* SessionEpoch */
	int32_t nt = codec_read_array_len(&r, false, 17);
	for (int32_t t = 0; t < nt && !r.err; t++) {
		uint8_t id[16];
		codec_read_uuid(&r, id);
		add_id(&r, ids, n, &cap, id);
		int32_t np = codec_read_array_len(&r, false, 33);
		for (int32_t p = 0; p < np && !r.err; p++) {
			codec_read_i32(&r);  /* Partition */
			codec_read_i32(&r);  /* CurrentLeaderEpoch */
			codec_read_i64(&r);  /* FetchOffset */
			codec_read_i32(&r);  /* LastFetchedEpoch */
			codec_read_i64(&r);  /* LogStartOffset */
			codec_read_i32(&r);  /* PartitionMaxBytes */
			codec_read_tags(&r, NULL, NULL, NULL);
		}
		codec_read_tags(&r, NULL, NULL, NULL);
	}
	/* ForgottenTopicsData and RackId follow: nothing to resolve there */
	if (r.err) {
		free(*ids);
		*ids = NULL;
		*n = 0;
	}
	return r.err;
}

int codec_metadata_request_by_ids(const uint8_t (*ids)[16], size_t n, int32_t correlation_id,
				  const char *client_id, struct codec_buf *out)
{
	if (n == 0 || n > INT32_MAX / 32)
		return -1;
	/* size prefix, then header v2: ApiKey, ApiVersion, CorrelationId,
	 * ClientId (int16 string), tags */
	codec_write_i32(out, 0);
	codec_write_i16(out, CODEC_API_METADATA);
	codec_write_i16(out, 12);
	codec_write_i32(out, correlation_id);
	out->flexible = false;
	codec_write_str(out, client_id);
	out->flexible = true;
	codec_write_tags(out, NULL, 0, NULL);
	/* body: Topics [TopicId, Name null, tags], AllowAutoTopicCreation,
	 * IncludeTopicAuthorizedOperations, tags */
	codec_write_array_len(out, (int32_t)n);
	for (size_t i = 0; i < n; i++) {
		codec_write_uuid(out, ids[i]);
		codec_write_str(out, NULL);
		codec_write_tags(out, NULL, 0, NULL);
	}
	codec_write_bool(out, false);
	codec_write_bool(out, false);
	codec_write_tags(out, NULL, 0, NULL);
	if (out->err != CODEC_OK)
		return -1;
	uint32_t len = (uint32_t)(out->len - 4);
	out->data[0] = (uint8_t)(len >> 24);
	out->data[1] = (uint8_t)(len >> 16);
	out->data[2] = (uint8_t)(len >> 8);
	out->data[3] = (uint8_t)len;
	return 0;
}
