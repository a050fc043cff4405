/*
 * Golden-frame generator: builds every message/version syncgate decodes with
 * Apache Kafka's own serializers (kafka-clients 4.4.0, the newest broker's:
 * ApiVersions v5) — an encoder independent of codec/ — and writes each full
 * frame (size prefix, header, body) as hex to <dir>/<api>_<req|resp>_v<N>.hex.
 *
 *   SG_KAFKA_VERSION=4.4.0 SG_KAFKA_BROKER_ONLY=1 tests/kafka/fetch-jars.sh
 *   java -cp "$(ls .cache/kafka-4.4.0/libs/*.jar | tr '\n' :)" \
 *       tests/codec/GenGolden.java tests/codec/golden
 *
 * Real frames from a broker/client can replace or extend these:
 * tests/codec/capture-golden.py.
 */
import java.nio.ByteBuffer;
import java.nio.file.*;
import java.util.*;

import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.message.*;
import org.apache.kafka.common.protocol.*;
import org.apache.kafka.common.protocol.types.RawTaggedField;
import org.apache.kafka.common.record.internal.*;

public class GenGolden {
	static Path dir;
	static final Uuid TOPIC_ID = new Uuid(0x0123456789abcdefL, 0x0fedcba987654321L);

	static void put(String name, ApiKeys key, short v, boolean request, Message body) throws Exception {
		ObjectSerializationCache c = new ObjectSerializationCache();
		Message hdr;
		short hv;
		if (request) {
			hdr = new RequestHeaderData().setRequestApiKey(key.id).setRequestApiVersion(v)
				.setCorrelationId(42 + v).setClientId("golden-client");
			hv = key.requestHeaderVersion(v);
		} else {
			hdr = new ResponseHeaderData().setCorrelationId(42 + v);
			hv = key.responseHeaderVersion(v);
		}
		int size = hdr.size(c, hv) + body.size(c, v);
		ByteBuffer buf = ByteBuffer.allocate(4 + size);
		buf.putInt(size);
		ByteBufferAccessor a = new ByteBufferAccessor(buf);
		hdr.write(a, c, hv);
		body.write(a, c, v);
		StringBuilder sb = new StringBuilder();
		byte[] b = buf.array();
		for (int i = 0; i < b.length; i++) {
			sb.append(String.format("%02x", b[i]));
			if (i % 32 == 31) sb.append('\n');
		}
		sb.append('\n');
		String file = name + "_" + (request ? "req" : "resp") + "_v" + v + ".hex";
		Files.writeString(dir.resolve(file), sb.toString().replace("\n\n", "\n"));
	}

	static boolean flex(ApiKeys k, short v) { return k.requestHeaderVersion(v) >= 2; }

	static void unknownTag(Message m, ApiKeys k, short v) {
		if (flex(k, v)) m.unknownTaggedFields().add(new RawTaggedField(9, new byte[] {1, 2, 3}));
	}

	static SimpleRecord rec(int i) {
		return new SimpleRecord(1700000000000L + i, ("key" + i).getBytes(), ("value-" + i).getBytes());
	}

	static MemoryRecords twoBatches() {
		MemoryRecords a = MemoryRecords.withRecords(Compression.NONE, rec(0), rec(1), rec(2));
		MemoryRecords b = MemoryRecords.withTransactionalRecords(Compression.NONE, 4242L, (short) 3, 17,
			rec(3), rec(4));
		ByteBuffer both = ByteBuffer.allocate(a.sizeInBytes() + b.sizeInBytes());
		both.put(a.buffer().duplicate()).put(b.buffer().duplicate()).flip();
		return MemoryRecords.readableRecords(both);
	}

	static void produce() throws Exception {
		ApiKeys k = ApiKeys.PRODUCE;
		for (short v = 3; v <= 13; v++) {
			ProduceRequestData.TopicProduceDataCollection topics = new ProduceRequestData.TopicProduceDataCollection();
			for (int t = 0; t < 2; t++) {
				ProduceRequestData.TopicProduceData td = new ProduceRequestData.TopicProduceData();
				if (v >= 13) td.setTopicId(t == 0 ? TOPIC_ID : Uuid.ONE_UUID); else td.setName("topic-" + t);
				td.setPartitionData(List.of(
					new ProduceRequestData.PartitionProduceData().setIndex(0)
						.setRecords(MemoryRecords.withRecords(Compression.NONE, rec(t))),
					new ProduceRequestData.PartitionProduceData().setIndex(1).setRecords(twoBatches())));
				topics.add(td);
			}
			ProduceRequestData req = new ProduceRequestData().setTransactionalId(v % 2 == 0 ? "txn-1" : null)
				.setAcks((short) -1).setTimeoutMs(30000).setTopicData(topics);
			put("produce", k, v, true, req);

			ProduceResponseData.TopicProduceResponseCollection rt = new ProduceResponseData.TopicProduceResponseCollection();
			for (int t = 0; t < 2; t++) {
				ProduceResponseData.TopicProduceResponse tr = new ProduceResponseData.TopicProduceResponse();
				if (v >= 13) tr.setTopicId(t == 0 ? TOPIC_ID : Uuid.ONE_UUID); else tr.setName("topic-" + t);
				ProduceResponseData.PartitionProduceResponse ok = new ProduceResponseData.PartitionProduceResponse()
					.setIndex(0).setErrorCode((short) 0).setBaseOffset(1000 + t).setLogAppendTimeMs(-1)
					.setLogStartOffset(0);
				ProduceResponseData.PartitionProduceResponse bad = new ProduceResponseData.PartitionProduceResponse()
					.setIndex(1).setErrorCode((short) 6).setBaseOffset(-1).setLogAppendTimeMs(-1)
					.setLogStartOffset(-1);
				if (v >= 8) {
					bad.setRecordErrors(List.of(new ProduceResponseData.BatchIndexAndErrorMessage()
						.setBatchIndex(2).setBatchIndexErrorMessage("bad record")));
					bad.setErrorMessage("not the leader");
				}
				if (v >= 10) bad.setCurrentLeader(new ProduceResponseData.LeaderIdAndEpoch().setLeaderId(2).setLeaderEpoch(7));
				tr.setPartitionResponses(List.of(ok, bad));
				rt.add(tr);
			}
			ProduceResponseData resp = new ProduceResponseData().setResponses(rt).setThrottleTimeMs(5);
			if (v >= 10) {
				ProduceResponseData.NodeEndpointCollection ne = new ProduceResponseData.NodeEndpointCollection();
				ne.add(new ProduceResponseData.NodeEndpoint().setNodeId(2).setHost("broker-2.internal").setPort(9092).setRack("rack-b"));
				ne.add(new ProduceResponseData.NodeEndpoint().setNodeId(3).setHost("broker-3.internal").setPort(9093).setRack(null));
				resp.setNodeEndpoints(ne);
			}
			unknownTag(resp, k, v);
			put("produce", k, v, false, resp);
		}
	}

	static void fetch() throws Exception {
		ApiKeys k = ApiKeys.FETCH;
		for (short v = 4; v <= 18; v++) {
			List<FetchResponseData.FetchableTopicResponse> topics = new ArrayList<>();
			for (int t = 0; t < 2; t++) {
				FetchResponseData.FetchableTopicResponse ft = new FetchResponseData.FetchableTopicResponse();
				if (v >= 13) ft.setTopicId(t == 0 ? TOPIC_ID : Uuid.ONE_UUID); else ft.setTopic("topic-" + t);
				FetchResponseData.PartitionData p0 = new FetchResponseData.PartitionData().setPartitionIndex(0)
					.setErrorCode((short) 0).setHighWatermark(5000 + t).setLastStableOffset(4990 + t)
					.setLogStartOffset(10).setRecords(twoBatches())
					.setAbortedTransactions(List.of(new FetchResponseData.AbortedTransaction().setProducerId(4242).setFirstOffset(3)));
				if (v >= 11) p0.setPreferredReadReplica(-1);
				FetchResponseData.PartitionData p1 = new FetchResponseData.PartitionData().setPartitionIndex(1)
					.setErrorCode((short) 6).setHighWatermark(-1).setLastStableOffset(-1).setLogStartOffset(-1)
					.setAbortedTransactions(null).setRecords(MemoryRecords.EMPTY);
				if (v >= 12) p1.setCurrentLeader(new FetchResponseData.LeaderIdAndEpoch().setLeaderId(3).setLeaderEpoch(9));
				ft.setPartitions(List.of(p0, p1));
				topics.add(ft);
			}
			FetchResponseData resp = new FetchResponseData().setThrottleTimeMs(0).setErrorCode((short) 0)
				.setSessionId(v >= 7 ? 77 : 0).setResponses(topics);
			if (v >= 16) {
				FetchResponseData.NodeEndpointCollection ne = new FetchResponseData.NodeEndpointCollection();
				ne.add(new FetchResponseData.NodeEndpoint().setNodeId(3).setHost("broker-3.internal").setPort(9093).setRack("rack-c"));
				resp.setNodeEndpoints(ne);
			}
			unknownTag(resp, k, v);
			put("fetch", k, v, false, resp);
		}
	}

	static void metadata() throws Exception {
		ApiKeys k = ApiKeys.METADATA;
		for (short v = 0; v <= 13; v++) {
			MetadataResponseData.MetadataResponseBrokerCollection brokers = new MetadataResponseData.MetadataResponseBrokerCollection();
			for (int b = 1; b <= 3; b++)
				brokers.add(new MetadataResponseData.MetadataResponseBroker().setNodeId(b)
					.setHost("broker-" + b + ".internal").setPort(9090 + b).setRack(v >= 1 && b != 3 ? "rack-" + b : null));
			MetadataResponseData.MetadataResponseTopicCollection topics = new MetadataResponseData.MetadataResponseTopicCollection();
			for (int t = 0; t < 2; t++) {
				MetadataResponseData.MetadataResponseTopic mt = new MetadataResponseData.MetadataResponseTopic()
					.setErrorCode((short) 0).setName("topic-" + t).setIsInternal(v >= 1 && t == 1);
				if (v >= 10) mt.setTopicId(t == 0 ? TOPIC_ID : Uuid.ONE_UUID);
				if (v >= 8) mt.setTopicAuthorizedOperations(0x0ff8);
				List<MetadataResponseData.MetadataResponsePartition> parts = new ArrayList<>();
				for (int p = 0; p < 3; p++) {
					MetadataResponseData.MetadataResponsePartition mp = new MetadataResponseData.MetadataResponsePartition()
						.setErrorCode((short) 0).setPartitionIndex(p).setLeaderId(1 + p % 3)
						.setReplicaNodes(List.of(1, 2, 3)).setIsrNodes(p == 2 ? List.of(1, 2) : List.of(1, 2, 3));
					if (v >= 7) mp.setLeaderEpoch(4 + p);
					if (v >= 5) mp.setOfflineReplicas(p == 2 ? List.of(3) : List.of());
					parts.add(mp);
				}
				mt.setPartitions(parts);
				topics.add(mt);
			}
			MetadataResponseData resp = new MetadataResponseData().setBrokers(brokers).setTopics(topics);
			if (v >= 3) resp.setThrottleTimeMs(1);
			if (v >= 2) resp.setClusterId("golden-cluster-id");
			if (v >= 1) resp.setControllerId(1);
			if (v >= 8 && v <= 10) resp.setClusterAuthorizedOperations(0x0ff8);
			if (v >= 13) resp.setErrorCode((short) 0);
			unknownTag(resp, k, v);
			put("metadata", k, v, false, resp);
		}
	}

	static void findCoordinator() throws Exception {
		ApiKeys k = ApiKeys.FIND_COORDINATOR;
		for (short v = 0; v <= 6; v++) {
			FindCoordinatorResponseData resp = new FindCoordinatorResponseData();
			if (v >= 1) resp.setThrottleTimeMs(3);
			if (v < 4) {
				resp.setErrorCode((short) 0).setNodeId(2).setHost("broker-2.internal").setPort(9092);
				if (v >= 1) resp.setErrorMessage(null);
			} else {
				resp.setCoordinators(List.of(
					new FindCoordinatorResponseData.Coordinator().setKey("group-a").setNodeId(2)
						.setHost("broker-2.internal").setPort(9092).setErrorCode((short) 0).setErrorMessage(null),
					new FindCoordinatorResponseData.Coordinator().setKey("group-b").setNodeId(-1)
						.setHost("").setPort(-1).setErrorCode((short) 15).setErrorMessage("coordinator not available")));
			}
			put("find_coordinator", k, v, false, resp);
		}
	}

	static void describeCluster() throws Exception {
		ApiKeys k = ApiKeys.DESCRIBE_CLUSTER;
		for (short v = 0; v <= 2; v++) {
			DescribeClusterResponseData.DescribeClusterBrokerCollection brokers = new DescribeClusterResponseData.DescribeClusterBrokerCollection();
			for (int b = 1; b <= 2; b++) {
				DescribeClusterResponseData.DescribeClusterBroker db = new DescribeClusterResponseData.DescribeClusterBroker()
					.setBrokerId(b).setHost("broker-" + b + ".internal").setPort(9090 + b).setRack(b == 1 ? "rack-1" : null);
				if (v >= 2) db.setIsFenced(b == 2);
				brokers.add(db);
			}
			DescribeClusterResponseData resp = new DescribeClusterResponseData().setThrottleTimeMs(0)
				.setErrorCode((short) 0).setErrorMessage(null).setClusterId("golden-cluster-id")
				.setControllerId(1).setBrokers(brokers).setClusterAuthorizedOperations(-2147483648);
			if (v >= 1) resp.setEndpointType((byte) 1);
			put("describe_cluster", k, v, false, resp);
		}
	}

	static void initProducerId() throws Exception {
		ApiKeys k = ApiKeys.INIT_PRODUCER_ID;
		for (short v = 0; v <= 5; v++) {
			InitProducerIdRequestData req = new InitProducerIdRequestData().setTransactionalId("golden-txn")
				.setTransactionTimeoutMs(60000);
			if (v >= 3) req.setProducerId(4242L).setProducerEpoch((short) 7);
			put("init_producer_id", k, v, true, req);
			put("init_producer_id", k, v, false, new InitProducerIdResponseData().setThrottleTimeMs(5)
				.setErrorCode((short) 0).setProducerId(1000001L).setProducerEpoch((short) 3));
		}
	}

	static void endTxn() throws Exception {
		ApiKeys k = ApiKeys.END_TXN;
		for (short v = 0; v <= 5; v++) {
			put("end_txn", k, v, true, new EndTxnRequestData().setTransactionalId("golden-txn")
				.setProducerId(4242L).setProducerEpoch((short) 7).setCommitted(true));
			EndTxnResponseData resp = new EndTxnResponseData().setThrottleTimeMs(5).setErrorCode((short) 0);
			if (v >= 5) resp.setProducerId(1000002L).setProducerEpoch((short) 0);
			put("end_txn", k, v, false, resp);
		}
	}

	static void offsetCommit() throws Exception {
		ApiKeys k = ApiKeys.OFFSET_COMMIT;
		for (short v = 2; v <= 10; v++) {
			OffsetCommitRequestData.OffsetCommitRequestTopic t = new OffsetCommitRequestData.OffsetCommitRequestTopic();
			if (v >= 10) t.setTopicId(TOPIC_ID); else t.setName("orders");
			t.setPartitions(List.of(
				new OffsetCommitRequestData.OffsetCommitRequestPartition().setPartitionIndex(0)
					.setCommittedOffset(1234L).setCommittedLeaderEpoch(5).setCommittedMetadata("golden-meta"),
				new OffsetCommitRequestData.OffsetCommitRequestPartition().setPartitionIndex(3)
					.setCommittedOffset(77L).setCommittedLeaderEpoch(-1).setCommittedMetadata(null)));
			OffsetCommitRequestData req = new OffsetCommitRequestData().setGroupId("golden-group")
				.setGenerationIdOrMemberEpoch(9).setMemberId("member-1").setTopics(List.of(t));
			if (v >= 7) req.setGroupInstanceId("instance-1");
			unknownTag(req, k, v);
			put("offset_commit", k, v, true, req);
			OffsetCommitResponseData.OffsetCommitResponseTopic rt = new OffsetCommitResponseData.OffsetCommitResponseTopic();
			if (v >= 10) rt.setTopicId(TOPIC_ID); else rt.setName("orders");
			rt.setPartitions(List.of(
				new OffsetCommitResponseData.OffsetCommitResponsePartition().setPartitionIndex(0).setErrorCode((short) 0),
				new OffsetCommitResponseData.OffsetCommitResponsePartition().setPartitionIndex(3).setErrorCode((short) 25)));
			put("offset_commit", k, v, false, new OffsetCommitResponseData().setThrottleTimeMs(5).setTopics(List.of(rt)));
		}
	}

	static void txnOffsetCommit() throws Exception {
		ApiKeys k = ApiKeys.TXN_OFFSET_COMMIT;
		for (short v = 0; v <= 6; v++) {
			TxnOffsetCommitRequestData.TxnOffsetCommitRequestTopic t = new TxnOffsetCommitRequestData.TxnOffsetCommitRequestTopic();
			if (v >= 6) t.setTopicId(TOPIC_ID); else t.setName("orders");
			t.setPartitions(List.of(
					new TxnOffsetCommitRequestData.TxnOffsetCommitRequestPartition().setPartitionIndex(0)
						.setCommittedOffset(1234L).setCommittedLeaderEpoch(5).setCommittedMetadata("golden-meta"),
					new TxnOffsetCommitRequestData.TxnOffsetCommitRequestPartition().setPartitionIndex(3)
						.setCommittedOffset(77L).setCommittedLeaderEpoch(-1).setCommittedMetadata(null)));
			TxnOffsetCommitRequestData req = new TxnOffsetCommitRequestData().setTransactionalId("golden-txn")
				.setGroupId("golden-group").setProducerId(4242L).setProducerEpoch((short) 7).setTopics(List.of(t));
			if (v >= 3) req.setGenerationIdOrMemberEpoch(9).setMemberId("member-1").setGroupInstanceId("instance-1");
			unknownTag(req, k, v);
			put("txn_offset_commit", k, v, true, req);
		}
	}

	static void apiVersions() throws Exception {
		ApiKeys k = ApiKeys.API_VERSIONS;
		for (short v = 0; v <= 5; v++) {
			ApiVersionsRequestData req = new ApiVersionsRequestData();
			if (v >= 3) req.setClientSoftwareName("golden").setClientSoftwareVersion("1.0");
			if (v >= 5) req.setClusterId("golden-cluster-id").setNodeId(3);
			put("api_versions", k, v, true, req);
			ApiVersionsResponseData.ApiVersionCollection keys = new ApiVersionsResponseData.ApiVersionCollection();
			for (ApiKeys a : new ApiKeys[] {ApiKeys.PRODUCE, ApiKeys.FETCH, ApiKeys.METADATA, ApiKeys.API_VERSIONS})
				keys.add(new ApiVersionsResponseData.ApiVersion().setApiKey(a.id).setMinVersion(a.oldestVersion()).setMaxVersion(a.latestVersion()));
			ApiVersionsResponseData resp = new ApiVersionsResponseData().setErrorCode((short) 0).setApiKeys(keys);
			if (v >= 1) resp.setThrottleTimeMs(0);
			if (v >= 3) {
				ApiVersionsResponseData.SupportedFeatureKeyCollection sf = new ApiVersionsResponseData.SupportedFeatureKeyCollection();
				sf.add(new ApiVersionsResponseData.SupportedFeatureKey().setName("metadata.version").setMinVersion((short) 7).setMaxVersion((short) 27));
				resp.setSupportedFeatures(sf).setFinalizedFeaturesEpoch(12);
				ApiVersionsResponseData.FinalizedFeatureKeyCollection ff = new ApiVersionsResponseData.FinalizedFeatureKeyCollection();
				ff.add(new ApiVersionsResponseData.FinalizedFeatureKey().setName("metadata.version").setMinVersionLevel((short) 27).setMaxVersionLevel((short) 27));
				resp.setFinalizedFeatures(ff);
			}
			put("api_versions", k, v, false, resp);
		}
		/* A broker's answer to a request version it does not know: v0 layout, error 35. */
		ApiVersionsResponseData.ApiVersionCollection keys = new ApiVersionsResponseData.ApiVersionCollection();
		keys.add(new ApiVersionsResponseData.ApiVersion().setApiKey((short) 18).setMinVersion((short) 0).setMaxVersion((short) 4));
		put("api_versions_err", k, (short) 0, false,
			new ApiVersionsResponseData().setErrorCode(Errors.UNSUPPORTED_VERSION.code()).setApiKeys(keys));
	}

	static void listOffsets() throws Exception {
		ApiKeys k = ApiKeys.LIST_OFFSETS;
		for (short v = 1; v <= 11; v++) {
			ListOffsetsRequestData.ListOffsetsPartition p = new ListOffsetsRequestData.ListOffsetsPartition()
				.setPartitionIndex(0).setTimestamp(-1);
			if (v >= 4) p.setCurrentLeaderEpoch(5);
			ListOffsetsRequestData req = new ListOffsetsRequestData().setReplicaId(-1)
				.setTopics(List.of(new ListOffsetsRequestData.ListOffsetsTopic().setName("topic-0")
					.setPartitions(List.of(p, new ListOffsetsRequestData.ListOffsetsPartition().setPartitionIndex(1).setTimestamp(-2)))));
			if (v >= 2) req.setIsolationLevel((byte) 1);
			if (v >= 10) req.setTimeoutMs(15000);
			put("list_offsets", k, v, true, req);
			ListOffsetsResponseData.ListOffsetsPartitionResponse rp = new ListOffsetsResponseData.ListOffsetsPartitionResponse()
				.setPartitionIndex(0).setErrorCode((short) 0).setTimestamp(-1).setOffset(5000);
			if (v >= 4) rp.setLeaderEpoch(5);
			ListOffsetsResponseData resp = new ListOffsetsResponseData()
				.setTopics(List.of(new ListOffsetsResponseData.ListOffsetsTopicResponse().setName("topic-0")
					.setPartitions(List.of(rp))));
			if (v >= 2) resp.setThrottleTimeMs(0);
			put("list_offsets", k, v, false, resp);
		}
	}

	/* syncgate's own requests about a transaction (codec/txn.c): DescribeTransactions v0, and the
	 * latest-offsets ListOffsets v6 of a commit's partitions (two topics, the first with two) */
	static void txn() throws Exception {
		put("describe_transactions", ApiKeys.DESCRIBE_TRANSACTIONS, (short) 0, true,
			new DescribeTransactionsRequestData().setTransactionalIds(List.of("golden-txn")));
		put("describe_transactions", ApiKeys.DESCRIBE_TRANSACTIONS, (short) 0, false,
			new DescribeTransactionsResponseData().setThrottleTimeMs(5).setTransactionStates(List.of(
				new DescribeTransactionsResponseData.TransactionState().setErrorCode((short) 0)
					.setTransactionalId("golden-txn").setTransactionState("PrepareCommit")
					.setTransactionTimeoutMs(60000).setTransactionStartTimeMs(1700000000000L)
					.setProducerId(4242L).setProducerEpoch((short) 7)
					.setTopics(new DescribeTransactionsResponseData.TopicDataCollection(List.of(
						new DescribeTransactionsResponseData.TopicData().setTopic("orders").setPartitions(List.of(0, 3)),
						new DescribeTransactionsResponseData.TopicData().setTopic("payments").setPartitions(List.of(1)))
						.iterator())))));
		short v = 6;
		ListOffsetsRequestData req = new ListOffsetsRequestData().setReplicaId(-1).setIsolationLevel((byte) 0)
			.setTopics(List.of(
				new ListOffsetsRequestData.ListOffsetsTopic().setName("orders").setPartitions(List.of(
					new ListOffsetsRequestData.ListOffsetsPartition().setPartitionIndex(0).setCurrentLeaderEpoch(-1).setTimestamp(-1),
					new ListOffsetsRequestData.ListOffsetsPartition().setPartitionIndex(3).setCurrentLeaderEpoch(-1).setTimestamp(-1))),
				new ListOffsetsRequestData.ListOffsetsTopic().setName("payments").setPartitions(List.of(
					new ListOffsetsRequestData.ListOffsetsPartition().setPartitionIndex(1).setCurrentLeaderEpoch(-1).setTimestamp(-1)))));
		put("txn_list_offsets", ApiKeys.LIST_OFFSETS, v, true, req);
		ListOffsetsResponseData resp = new ListOffsetsResponseData().setThrottleTimeMs(0).setTopics(List.of(
			new ListOffsetsResponseData.ListOffsetsTopicResponse().setName("orders").setPartitions(List.of(
				new ListOffsetsResponseData.ListOffsetsPartitionResponse().setPartitionIndex(0).setErrorCode((short) 0)
					.setTimestamp(-1).setOffset(5000).setLeaderEpoch(5),
				new ListOffsetsResponseData.ListOffsetsPartitionResponse().setPartitionIndex(3).setErrorCode((short) 6)
					.setTimestamp(-1).setOffset(-1).setLeaderEpoch(-1))),
			new ListOffsetsResponseData.ListOffsetsTopicResponse().setName("payments").setPartitions(List.of(
				new ListOffsetsResponseData.ListOffsetsPartitionResponse().setPartitionIndex(1).setErrorCode((short) 0)
					.setTimestamp(-1).setOffset(17).setLeaderEpoch(2)))));
		put("txn_list_offsets", ApiKeys.LIST_OFFSETS, v, false, resp);
	}

	static void share() throws Exception {
		for (short v = 1; v <= 2; v++) {
			ShareFetchResponseData.NodeEndpointCollection ne = new ShareFetchResponseData.NodeEndpointCollection();
			ne.add(new ShareFetchResponseData.NodeEndpoint().setNodeId(2).setHost("broker-2.internal").setPort(9092).setRack(null));
			ShareFetchResponseData sf = new ShareFetchResponseData().setThrottleTimeMs(0).setErrorCode((short) 0)
				.setAcquisitionLockTimeoutMs(30000)
				.setResponses(new ShareFetchResponseData.ShareFetchableTopicResponseCollection(List.of(
					new ShareFetchResponseData.ShareFetchableTopicResponse().setTopicId(TOPIC_ID).setPartitions(List.of(
						new ShareFetchResponseData.PartitionData().setPartitionIndex(0).setErrorCode((short) 0)
							.setCurrentLeader(new ShareFetchResponseData.LeaderIdAndEpoch().setLeaderId(2).setLeaderEpoch(4))
							.setRecords(twoBatches())
							.setAcquiredRecords(List.of(new ShareFetchResponseData.AcquiredRecords().setFirstOffset(0).setLastOffset(4).setDeliveryCount((short) 1)))))).iterator()))
				.setNodeEndpoints(ne);
			put("share_fetch", ApiKeys.SHARE_FETCH, v, false, sf);
			ShareAcknowledgeResponseData.NodeEndpointCollection ne2 = new ShareAcknowledgeResponseData.NodeEndpointCollection();
			ne2.add(new ShareAcknowledgeResponseData.NodeEndpoint().setNodeId(2).setHost("broker-2.internal").setPort(9092).setRack("r"));
			ShareAcknowledgeResponseData sa = new ShareAcknowledgeResponseData().setThrottleTimeMs(0).setErrorCode((short) 0)
				.setResponses(new ShareAcknowledgeResponseData.ShareAcknowledgeTopicResponseCollection(List.of(
					new ShareAcknowledgeResponseData.ShareAcknowledgeTopicResponse().setTopicId(TOPIC_ID).setPartitions(List.of(
						new ShareAcknowledgeResponseData.PartitionData().setPartitionIndex(0).setErrorCode((short) 6)
							.setCurrentLeader(new ShareAcknowledgeResponseData.LeaderIdAndEpoch().setLeaderId(2).setLeaderEpoch(4))))).iterator()))
				.setNodeEndpoints(ne2);
			if (v >= 2) sa.setAcquisitionLockTimeoutMs(30000);
			put("share_acknowledge", ApiKeys.SHARE_ACKNOWLEDGE, v, false, sa);
		}
	}

	public static void main(String[] args) throws Exception {
		dir = Paths.get(args[0]);
		Files.createDirectories(dir);
		produce();
		fetch();
		metadata();
		findCoordinator();
		describeCluster();
		initProducerId();
		endTxn();
		offsetCommit();
		txnOffsetCommit();
		apiVersions();
		listOffsets();
		txn();
		share();
	}
}
