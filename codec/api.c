/* The API table: every API key of Apache Kafka 4.x (up to 4.4), what
 * syncgate does with it, and the header versions it implies. */
#include <string.h>

#include "codec/codec.h"

/*
 * Columns: key, name, flexible-from (spec flexibleVersions), highest version
 * syncgate decodes, lowest and highest stable version Kafka 4.4 serves, first
 * version whose response names brokers (rewritten to advertised addresses,
 * codec/endpoints.c; -1 never), and what else syncgate does (CODEC_DOES_*:
 * Produce held; Fetch, ListOffsets, OffsetForLeaderEpoch clamped, Fetch
 * streamed; Metadata read for its TopicIds; InitProducerId and EndTxn read on
 * a switched sidecar (the producer ids its broker issued, proxy/pidmap.c),
 * AddOffsetsToTxn and TxnOffsetCommit too (a transaction opened on the
 * source is answered there, proxy/pidmap_txn.c);
 * ApiVersions rewritten and its
 * client software name read; SASL read for the principal and raw tokens).
 * Written by hand from kafka-clients 4.4.0 (ApiKeys and the *Request.json / *Response.json specs; there is no
 * generator — tests/codec/test_api.c checks the rows syncgate relies on);
 * every row with a `does` or an endpoints_from decodes (decode_max) every
 * version 4.4 serves, and a request above its decode_max is reported and
 * refused or passed as proxy/versions.c says;
 * keys 4–7 (removed in 4.0) keep their historical flexible-from versions.
 * Produce decodes up to "v14", which is v13 on the wire.
 */
static const struct codec_api apis[] = {
	{0, "Produce", 9, 14, 3, 13, 10, CODEC_DOES_READ_REQUEST | CODEC_DOES_HOLD},
	{1, "Fetch", 12, 18, 4, 18, 16, CODEC_DOES_READ_REQUEST | CODEC_DOES_CLAMP | CODEC_DOES_STREAM},
	{2, "ListOffsets", 6, 11, 1, 11, -1, CODEC_DOES_READ_REQUEST | CODEC_DOES_CLAMP},
	{3, "Metadata", 9, 13, 0, 13, 0, CODEC_DOES_READ_RESPONSE},
	{4, "LeaderAndIsr", 4, -1, -1, -1, -1, 0},
	{5, "StopReplica", 2, -1, -1, -1, -1, 0},
	{6, "UpdateMetadata", 6, -1, -1, -1, -1, 0},
	{7, "ControlledShutdown", 3, -1, -1, -1, -1, 0},
	{8, "OffsetCommit", 8, 10, 2, 10, -1, CODEC_DOES_READ_REQUEST | CODEC_DOES_READ_RESPONSE},
	{9, "OffsetFetch", 6, -1, 1, 10, -1, 0},
	{10, "FindCoordinator", 3, 6, 0, 6, 0, 0},
	{11, "JoinGroup", 6, -1, 0, 9, -1, 0},
	{12, "Heartbeat", 4, -1, 0, 4, -1, 0},
	{13, "LeaveGroup", 4, -1, 0, 5, -1, 0},
	{14, "SyncGroup", 4, -1, 0, 5, -1, 0},
	{15, "DescribeGroups", 5, -1, 0, 6, -1, 0},
	{16, "ListGroups", 3, -1, 0, 5, -1, 0},
	{17, "SaslHandshake", -1, 1, 0, 1, -1, CODEC_DOES_READ_REQUEST | CODEC_DOES_READ_RESPONSE},
	{18, "ApiVersions", 3, CODEC_API_VERSIONS_MAX, 0, 5, -1, CODEC_DOES_READ_REQUEST | CODEC_DOES_READ_RESPONSE},
	{19, "CreateTopics", 5, -1, 2, 7, -1, 0},
	{20, "DeleteTopics", 4, -1, 1, 6, -1, 0},
	{21, "DeleteRecords", 2, -1, 0, 2, -1, 0},
	{22, "InitProducerId", 2, 5, 0, 5, -1, CODEC_DOES_READ_REQUEST | CODEC_DOES_READ_RESPONSE},
	{23, "OffsetForLeaderEpoch", 4, 4, 2, 4, -1, CODEC_DOES_READ_REQUEST | CODEC_DOES_CLAMP},
	{24, "AddPartitionsToTxn", 3, -1, 0, 5, -1, 0},
	{25, "AddOffsetsToTxn", 3, 4, 0, 4, -1, CODEC_DOES_READ_REQUEST},
	{26, "EndTxn", 3, 5, 0, 5, -1, CODEC_DOES_READ_REQUEST | CODEC_DOES_READ_RESPONSE},
	{27, "WriteTxnMarkers", 1, -1, 1, 2, -1, 0},
	{28, "TxnOffsetCommit", 3, 6, 0, 6, -1, CODEC_DOES_READ_REQUEST},
	{29, "DescribeAcls", 2, -1, 1, 3, -1, 0},
	{30, "CreateAcls", 2, -1, 1, 3, -1, 0},
	{31, "DeleteAcls", 2, -1, 1, 3, -1, 0},
	{32, "DescribeConfigs", 4, -1, 1, 4, -1, 0},
	{33, "AlterConfigs", 2, -1, 0, 2, -1, 0},
	{34, "AlterReplicaLogDirs", 2, -1, 1, 2, -1, 0},
	{35, "DescribeLogDirs", 2, -1, 1, 5, -1, 0},
	{36, "SaslAuthenticate", 2, 2, 0, 2, -1, CODEC_DOES_READ_RESPONSE},
	{37, "CreatePartitions", 2, -1, 0, 3, -1, 0},
	{38, "CreateDelegationToken", 2, -1, 1, 3, -1, 0},
	{39, "RenewDelegationToken", 2, -1, 1, 2, -1, 0},
	{40, "ExpireDelegationToken", 2, -1, 1, 2, -1, 0},
	{41, "DescribeDelegationToken", 2, -1, 1, 3, -1, 0},
	{42, "DeleteGroups", 2, -1, 0, 3, -1, 0},
	{43, "ElectLeaders", 2, -1, 0, 2, -1, 0},
	{44, "IncrementalAlterConfigs", 1, -1, 0, 1, -1, 0},
	{45, "AlterPartitionReassignments", 0, -1, 0, 1, -1, 0},
	{46, "ListPartitionReassignments", 0, -1, 0, 0, -1, 0},
	{47, "OffsetDelete", -1, -1, 0, 0, -1, 0},
	{48, "DescribeClientQuotas", 1, -1, 0, 1, -1, 0},
	{49, "AlterClientQuotas", 1, -1, 0, 1, -1, 0},
	{50, "DescribeUserScramCredentials", 0, -1, 0, 0, -1, 0},
	{51, "AlterUserScramCredentials", 0, -1, 0, 0, -1, 0},
	{52, "Vote", 0, -1, 0, 2, -1, 0},
	{53, "BeginQuorumEpoch", 1, -1, 0, 1, -1, 0},
	{54, "EndQuorumEpoch", 1, -1, 0, 1, -1, 0},
	{55, "DescribeQuorum", 0, -1, 0, 2, -1, 0},
	{56, "AlterPartition", 0, -1, 2, 3, -1, 0},
	{57, "UpdateFeatures", 0, -1, 0, 2, -1, 0},
	{58, "Envelope", 0, -1, 0, 0, -1, 0},
	{59, "FetchSnapshot", 0, -1, 0, 1, -1, 0},
	{60, "DescribeCluster", 0, 2, 0, 2, 0, 0},
	{61, "DescribeProducers", 0, -1, 0, 0, -1, 0},
	{62, "BrokerRegistration", 0, -1, 0, 4, -1, 0},
	{63, "BrokerHeartbeat", 0, -1, 0, 2, -1, 0},
	{64, "UnregisterBroker", 0, -1, 0, 0, -1, 0},
	{65, "DescribeTransactions", 0, -1, 0, 0, -1, 0},
	{66, "ListTransactions", 0, -1, 0, 2, -1, 0},
	{67, "AllocateProducerIds", 0, -1, 0, 0, -1, 0},
	{68, "ConsumerGroupHeartbeat", 0, -1, 0, 1, -1, 0},
	{69, "ConsumerGroupDescribe", 0, -1, 0, 1, -1, 0},
	{70, "ControllerRegistration", 0, -1, 0, 0, -1, 0},
	{71, "GetTelemetrySubscriptions", 0, -1, 0, 0, -1, 0},
	{72, "PushTelemetry", 0, -1, 0, 0, -1, 0},
	{73, "AssignReplicasToDirs", 0, -1, 0, 0, -1, 0},
	{74, "ListConfigResources", 0, -1, 0, 1, -1, 0},
	{75, "DescribeTopicPartitions", 0, -1, 0, 0, -1, 0},
	{76, "ShareGroupHeartbeat", 0, -1, 1, 1, -1, 0},
	{77, "ShareGroupDescribe", 0, -1, 1, 1, -1, 0},
	{78, "ShareFetch", 0, 2, 1, 2, 0, CODEC_DOES_COUNT},
	{79, "ShareAcknowledge", 0, 2, 1, 2, 0, 0},
	{80, "AddRaftVoter", 0, -1, 0, 1, -1, 0},
	{81, "RemoveRaftVoter", 0, -1, 0, 0, -1, 0},
	{82, "UpdateRaftVoter", 0, -1, 0, 0, -1, 0},
	{83, "InitializeShareGroupState", 0, -1, 0, 0, -1, 0},
	{84, "ReadShareGroupState", 0, -1, 0, 0, -1, 0},
	{85, "WriteShareGroupState", 0, -1, 0, 1, -1, 0},
	{86, "DeleteShareGroupState", 0, -1, 0, 0, -1, 0},
	{87, "ReadShareGroupStateSummary", 0, -1, 0, 1, -1, 0},
	{88, "StreamsGroupHeartbeat", 0, -1, 0, 1, -1, 0},
	{89, "StreamsGroupDescribe", 0, -1, 0, 1, -1, 0},
	{90, "DescribeShareGroupOffsets", 0, -1, 0, 1, -1, 0},
	{91, "AlterShareGroupOffsets", 0, -1, 0, 0, -1, 0},
	{92, "DeleteShareGroupOffsets", 0, -1, 0, 0, -1, 0},
	{93, "StreamsGroupTopologyDescriptionUpdate", 0, -1, 0, 0, -1, 0},
	{94, "UnregisterController", 0, -1, 0, 0, -1, 0},
};

#define NAPIS ((int)(sizeof(apis) / sizeof(apis[0])))

const struct codec_api *codec_api_get(int16_t api_key)
{
	/* Keys are dense from 0 (checked by the unit tests). */
	return api_key >= 0 && api_key < NAPIS ? &apis[api_key] : NULL;
}

const char *codec_api_name(int16_t api_key)
{
	const struct codec_api *a = codec_api_get(api_key);
	return a ? a->name : "Unknown";
}

bool codec_api_flexible(int16_t api_key, int16_t api_version)
{
	const struct codec_api *a = codec_api_get(api_key);
	return a && a->flexible_from >= 0 && api_version >= a->flexible_from;
}

bool codec_decode_start(struct codec_reader *r, const struct codec_iov *iov, int niov, int16_t api_key,
			int16_t version, int16_t min, int16_t max, void *out, size_t size)
{
	memset(out, 0, size);
	if (version < min || version > max)
		return false;
	codec_reader_init(r, iov, niov);
	r->flexible = codec_api_flexible(api_key, version);
	return true;
}

int codec_request_header_version(int16_t api_key, int16_t api_version)
{
	return codec_api_flexible(api_key, api_version) ? 2 : 1;
}

int codec_response_header_version(int16_t api_key, int16_t api_version)
{
	/* ApiVersions responses keep header v0 so any client can read them. */
	if (api_key == CODEC_API_API_VERSIONS)
		return 0;
	return codec_api_flexible(api_key, api_version) ? 1 : 0;
}
