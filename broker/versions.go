package broker

import "github.com/kafkasim/kafkasim/broker/wire"

// Versions are the APIs and versions a broker serves: what clients
// (including real Kafka clients) may call, and what other brokers do.
// There is no UpdateMetadata: brokers follow the metadata log
// (metadata_log.go), as KRaft brokers do. Produce v13 (topics by id) is
// left out; Fetch v13+ names topics by id (fetch.go).
var Versions = wire.NewVersions(
	wire.Range{Key: 0, Min: 3, Max: 12}, // Produce
	wire.Range{Key: 1, Min: 4, Max: 17}, // Fetch (v13+: topics by id)
	wire.Range{Key: 2, Min: 1, Max: 10}, // ListOffsets (v7+ max timestamp, v8 earliest local, v9 latest tiered)
	wire.Range{Key: 3, Min: 1, Max: 12}, // Metadata
	wire.Range{Key: 8, Min: 2, Max: 9},  // OffsetCommit
	wire.Range{Key: 9, Min: 1, Max: 9},  // OffsetFetch
	wire.Range{Key: 10, Min: 0, Max: 6}, // FindCoordinator (v6: share keys refused, no share groups)
	wire.Range{Key: 11, Min: 0, Max: 9}, // JoinGroup
	wire.Range{Key: 12, Min: 0, Max: 4}, // Heartbeat
	wire.Range{Key: 13, Min: 0, Max: 5}, // LeaveGroup
	wire.Range{Key: 14, Min: 0, Max: 5}, // SyncGroup
	wire.Range{Key: 15, Min: 0, Max: 5}, // DescribeGroups
	wire.Range{Key: 16, Min: 0, Max: 5}, // ListGroups
	wire.Range{Key: 18, Min: 0, Max: 4}, // ApiVersions (v4: KAFKA-17011; no features are advertised)
	wire.Range{Key: 19, Min: 0, Max: 7}, // CreateTopics
	wire.Range{Key: 20, Min: 0, Max: 6}, // DeleteTopics (forwarded to the controllers)
	wire.Range{Key: 21, Min: 0, Max: 2}, // DeleteRecords
	wire.Range{Key: 22, Min: 0, Max: 5}, // InitProducerId (v5 may answer TRANSACTION_ABORTABLE; it never needs to)
	wire.Range{Key: 23, Min: 0, Max: 4}, // OffsetForLeaderEpoch
	wire.Range{Key: 24, Min: 0, Max: 5}, // AddPartitionsToTxn (v4+: brokers only, VerifyOnly)
	wire.Range{Key: 25, Min: 0, Max: 4}, // AddOffsetsToTxn
	wire.Range{Key: 26, Min: 0, Max: 5}, // EndTxn (v5: KIP-890 epoch bump)
	wire.Range{Key: 27, Min: 0, Max: 2}, // WriteTxnMarkers (brokers)
	wire.Range{Key: 28, Min: 0, Max: 5}, // TxnOffsetCommit (v6 is by topic id)
	wire.Range{Key: 32, Min: 0, Max: 4}, // DescribeConfigs
	wire.Range{Key: 33, Min: 0, Max: 2}, // AlterConfigs (forwarded to the controllers)
	wire.Range{Key: 35, Min: 0, Max: 4}, // DescribeLogDirs
	wire.Range{Key: 37, Min: 0, Max: 3}, // CreatePartitions (forwarded to the controllers)
	wire.Range{Key: 42, Min: 0, Max: 2}, // DeleteGroups
	wire.Range{Key: 43, Min: 0, Max: 2}, // ElectLeaders (forwarded to the controllers)
	wire.Range{Key: 44, Min: 0, Max: 1}, // IncrementalAlterConfigs (forwarded to the controllers)
	wire.Range{Key: 47, Min: 0, Max: 0}, // OffsetDelete
	wire.Range{Key: 55, Min: 0, Max: 2}, // DescribeQuorum (forwarded to the controllers)
	wire.Range{Key: 60, Min: 0, Max: 1}, // DescribeCluster
	wire.Range{Key: 61, Min: 0, Max: 0}, // DescribeProducers
	wire.Range{Key: 65, Min: 0, Max: 0}, // DescribeTransactions
	wire.Range{Key: 66, Min: 0, Max: 1}, // ListTransactions
	wire.Range{Key: 75, Min: 0, Max: 0}, // DescribeTopicPartitions
)
