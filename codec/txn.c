/*
 * syncgate's own requests about a transaction (codec/txn.h): the
 * DescribeTransactions v0 request and response (KIP-664: the coordinator's
 * state of a transactional id — its partitions while the transaction is open
 * or preparing), and a ListOffsets v6 of the latest offsets with its
 * response read partition by partition. Pure.
 */
#include <stdlib.h>
#include <string.h>

#include "codec/codec.h"

#define LIST_OFFSETS_LATEST (-1)

/* size prefix, then header v2: ApiKey, ApiVersion, CorrelationId, ClientId (int16 string), tags */
static void frame_start(struct codec_buf *out, int16_t key, int16_t version, int32_t correlation_id,
			const char *client_id)
{
	codec_write_i32(out, 0);
	codec_write_i16(out, key);
	codec_write_i16(out, version);
	codec_write_i32(out, correlation_id);
	out->flexible = false;
	codec_write_str(out, client_id);
	out->flexible = true;
	codec_write_tags(out, NULL, 0, NULL);
}

static int frame_finish(struct codec_buf *out)
{
	if (out->err != CODEC_OK || out->len < 4)
		return -1;
	uint32_t len = (uint32_t)(out->len - 4);
	out->data[0] = (uint8_t)(len >> 24);
	out->data[1] = (uint8_t)(len >> 16);
	out->data[2] = (uint8_t)(len >> 8);
	out->data[3] = (uint8_t)len;
	return 0;
}

int codec_describe_transactions_request(const char *transactional_id, int32_t correlation_id,
					const char *client_id, struct codec_buf *out)
{
	if (!transactional_id)
		return -1;
	frame_start(out, CODEC_API_DESCRIBE_TRANSACTIONS, CODEC_DESCRIBE_TRANSACTIONS_VERSION, correlation_id,
		    client_id);
	codec_write_array_len(out, 1);
	codec_write_str(out, transactional_id);
	codec_write_tags(out, NULL, 0, NULL);
	return frame_finish(out);
}

static void read_topic(struct codec_reader *r, void *elem, void *ctx)
{
	(void)ctx;
	struct codec_txn_topic *t = elem;
	t->name = codec_read_str(r, false);
	codec_read_int32s(r, &t->partitions);
	codec_read_tags(r, NULL, NULL, NULL);
}

static void read_state(struct codec_reader *r, void *elem, void *ctx)
{
	(void)ctx;
	struct codec_txn_state *s = elem;
	s->error_code = codec_read_i16(r);
	s->transactional_id = codec_read_str(r, false);
	s->state = codec_read_str(r, false);
	s->timeout_ms = codec_read_i32(r);
	s->start_time_ms = codec_read_i64(r);
	s->producer_id = codec_read_i64(r);
	s->producer_epoch = codec_read_i16(r);
	/* Topics: Topic (≥ 1 byte), Partitions (≥ 1), tags (≥ 1) */
	s->topics = codec_read_array(r, sizeof(*s->topics), 3, &s->ntopics, read_topic, NULL);
	codec_read_tags(r, NULL, NULL, NULL);
}

enum codec_err codec_describe_transactions_response_decode(const struct codec_iov *iov, int niov,
							   struct codec_describe_transactions_response *out)
{
	struct codec_reader r;
	if (!codec_decode_start(&r, iov, niov, CODEC_API_DESCRIBE_TRANSACTIONS, CODEC_DESCRIBE_TRANSACTIONS_VERSION,
				0, 0, out, sizeof(*out)))
		return CODEC_ERR_UNSUPPORTED;
	out->throttle_time_ms = codec_read_i32(&r);
	/* TransactionStates: 2 + 1 + 1 + 4 + 8 + 8 + 2 + 1 + 1 bytes at least */
	out->states = codec_read_array(&r, sizeof(*out->states), 28, &out->nstates, read_state, NULL);
	codec_read_tags(&r, NULL, NULL, NULL);
	return codec_reader_finish(&r);
}

static void topic_free(void *elem)
{
	struct codec_txn_topic *t = elem;
	free(t->name);
	free(t->partitions.v);
}

static void state_free(void *elem)
{
	struct codec_txn_state *s = elem;
	free(s->transactional_id);
	free(s->state);
	codec_array_free(s->topics, s->ntopics, sizeof(*s->topics), topic_free);
}

void codec_describe_transactions_response_free(struct codec_describe_transactions_response *m)
{
	codec_array_free(m->states, m->nstates, sizeof(*m->states), state_free);
	memset(m, 0, sizeof(*m));
}

int codec_list_offsets_latest_request(const struct codec_txn_partition *parts, size_t n, int8_t isolation_level,
				      int32_t correlation_id, const char *client_id, struct codec_buf *out)
{
	if (n == 0 || n > INT32_MAX / 32)
		return -1;
	frame_start(out, CODEC_API_LIST_OFFSETS, CODEC_TXN_LIST_OFFSETS_VERSION, correlation_id, client_id);
	codec_write_i32(out, -1); /* ReplicaId: a consumer */
	codec_write_i8(out, isolation_level);
	size_t ntopics = 0;
	for (size_t i = 0; i < n; i++)
		ntopics += i == 0 || strcmp(parts[i].topic, parts[i - 1].topic) != 0;
	codec_write_array_len(out, (int32_t)ntopics);
	for (size_t i = 0; i < n;) {
		size_t j = i;
		while (j < n && strcmp(parts[j].topic, parts[i].topic) == 0)
			j++;
		codec_write_str(out, parts[i].topic);
		codec_write_array_len(out, (int32_t)(j - i));
		for (size_t k = i; k < j; k++) {
			codec_write_i32(out, parts[k].partition);
			codec_write_i32(out, -1); /* CurrentLeaderEpoch: not checked */
			codec_write_i64(out, LIST_OFFSETS_LATEST);
			codec_write_tags(out, NULL, 0, NULL);
		}
		codec_write_tags(out, NULL, 0, NULL);
		i = j;
	}
	codec_write_tags(out, NULL, 0, NULL);
	return frame_finish(out);
}

enum codec_err codec_list_offsets_response_each(const struct codec_iov *iov, int niov, codec_list_offsets_fn fn,
						void *arg)
{
	struct codec_reader r;
	char scratch;
	if (!codec_decode_start(&r, iov, niov, CODEC_API_LIST_OFFSETS, CODEC_TXN_LIST_OFFSETS_VERSION,
				CODEC_TXN_LIST_OFFSETS_VERSION, CODEC_TXN_LIST_OFFSETS_VERSION, &scratch, 0))
		return CODEC_ERR_UNSUPPORTED;
	(void)codec_read_i32(&r); /* ThrottleTimeMs */
	int32_t nt = codec_read_array_len(&r, false, 2);
	for (int32_t t = 0; t < nt && r.err == CODEC_OK; t++) {
		char *name = codec_read_str(&r, false);
		/* PartitionIndex, ErrorCode, Timestamp, Offset, LeaderEpoch, tags */
		int32_t np = codec_read_array_len(&r, false, 4 + 2 + 8 + 8 + 4 + 1);
		for (int32_t p = 0; p < np && r.err == CODEC_OK; p++) {
			int32_t index = codec_read_i32(&r);
			int16_t error = codec_read_i16(&r);
			(void)codec_read_i64(&r); /* Timestamp */
			int64_t offset = codec_read_i64(&r);
			(void)codec_read_i32(&r); /* LeaderEpoch */
			codec_read_tags(&r, NULL, NULL, NULL);
			if (r.err == CODEC_OK && name)
				fn(arg, name, index, error, offset);
		}
		codec_read_tags(&r, NULL, NULL, NULL);
		free(name);
	}
	codec_read_tags(&r, NULL, NULL, NULL);
	return codec_reader_finish(&r);
}
