package broker

import "github.com/kafkasim/kafkasim/broker/wire"

// Versions are the APIs and versions a broker serves: what clients
// (including real Kafka clients) may call, and what other brokers do.
// There is no UpdateMetadata: brokers follow the metadata log
// (metadata_log.go), as KRaft brokers do. The notes say what a version
// range leaves out or how it is served; the README's API table is made
// from this list (TestTheReadmeListsTheAPIsTheBrokerServes).
var Versions = wire.NewVersions(
	wire.Range{Key: 0, Min: 3, Max: 12, Note: "acks 0, 1, all; idempotent and transactional; v13 (topics by id) not served"},         // Produce
	wire.Range{Key: 1, Min: 4, Max: 17, Note: "consumers and followers; v13+ topics by id; read_committed"},                          // Fetch
	wire.Range{Key: 2, Min: 1, Max: 10, Note: "earliest, latest, by timestamp, max timestamp (KIP-734)"},                             // ListOffsets
	wire.Range{Key: 3, Min: 1, Max: 12, Note: "v13 (after Kafka 4.0) not served"},                                                    // Metadata
	wire.Range{Key: 8, Min: 2, Max: 9, Note: "v10 (topics by id, after Kafka 4.0) not served"},                                       // OffsetCommit
	wire.Range{Key: 9, Min: 1, Max: 9, Note: "v10 (topics by id, after Kafka 4.0) not served"},                                       // OffsetFetch
	wire.Range{Key: 10, Min: 0, Max: 6, Note: "groups (share groups too) and transactions; share-coordinator keys (type 2) refused"}, // FindCoordinator
	wire.Range{Key: 11, Min: 0, Max: 9, Note: "classic protocol"},                                                                    // JoinGroup
	wire.Range{Key: 12, Min: 0, Max: 4},                                          // Heartbeat
	wire.Range{Key: 13, Min: 0, Max: 5},                                          // LeaveGroup
	wire.Range{Key: 14, Min: 0, Max: 5},                                          // SyncGroup
	wire.Range{Key: 15, Min: 0, Max: 5, Note: "v6 (after Kafka 4.0) not served"}, // DescribeGroups
	wire.Range{Key: 16, Min: 0, Max: 5},                                          // ListGroups
	wire.Range{Key: 18, Min: 0, Max: 4, Note: "no features advertised"},          // ApiVersions
	wire.Range{Key: 19, Min: 0, Max: 7, Note: "forwarded to the active controller; configs validated; manual assignments"}, // CreateTopics
	wire.Range{Key: 20, Min: 0, Max: 6, Note: "by name or id; forwarded; logs deleted on every replica"},                   // DeleteTopics
	wire.Range{Key: 21, Min: 0, Max: 2}, // DeleteRecords
	wire.Range{Key: 22, Min: 0, Max: 5}, // InitProducerId
	wire.Range{Key: 23, Min: 0, Max: 4}, // OffsetForLeaderEpoch
	wire.Range{Key: 24, Min: 0, Max: 5, Note: "v4+ (KIP-890 verification) from brokers only"}, // AddPartitionsToTxn
	wire.Range{Key: 25, Min: 0, Max: 4},                                                                                             // AddOffsetsToTxn
	wire.Range{Key: 26, Min: 0, Max: 5, Note: "v5: KIP-890 epoch bump"},                                                             // EndTxn
	wire.Range{Key: 27, Min: 0, Max: 2, Note: "from brokers only"},                                                                  // WriteTxnMarkers
	wire.Range{Key: 28, Min: 0, Max: 5, Note: "v6 (topics by id) not served"},                                                       // TxnOffsetCommit
	wire.Range{Key: 32, Min: 0, Max: 4, Note: "topics, brokers and groups, with sources"},                                           // DescribeConfigs
	wire.Range{Key: 33, Min: 0, Max: 2, Note: "topics; forwarded"},                                                                  // AlterConfigs
	wire.Range{Key: 35, Min: 0, Max: 4, Note: "one log directory; replica sizes"},                                                   // DescribeLogDirs
	wire.Range{Key: 37, Min: 0, Max: 3, Note: "forwarded"},                                                                          // CreatePartitions
	wire.Range{Key: 42, Min: 0, Max: 2, Note: "tombstones; v3 (after Kafka 4.0) not served"},                                        // DeleteGroups
	wire.Range{Key: 43, Min: 0, Max: 2, Note: "preferred and unclean; forwarded"},                                                   // ElectLeaders
	wire.Range{Key: 44, Min: 0, Max: 1, Note: "topics and groups; forwarded"},                                                       // IncrementalAlterConfigs
	wire.Range{Key: 47, Min: 0, Max: 0},                                                                                             // OffsetDelete
	wire.Range{Key: 55, Min: 0, Max: 2, Note: "forwarded to the quorum's leader"},                                                   // DescribeQuorum
	wire.Range{Key: 60, Min: 0, Max: 1, Note: "endpoints per listener; v2 (after Kafka 4.0) not served"},                            // DescribeCluster
	wire.Range{Key: 61, Min: 0, Max: 0},                                                                                             // DescribeProducers
	wire.Range{Key: 65, Min: 0, Max: 0},                                                                                             // DescribeTransactions
	wire.Range{Key: 66, Min: 0, Max: 1, Note: "KIP-994 duration filter; v2 (after Kafka 4.0) not served"},                           // ListTransactions
	wire.Range{Key: 68, Min: 0, Max: 1, Note: "KIP-848 consumer groups; server-side assignors uniform, range; regex subscriptions"}, // ConsumerGroupHeartbeat
	wire.Range{Key: 69, Min: 0, Max: 1},                                                                                             // ConsumerGroupDescribe
	wire.Range{Key: 75, Min: 0, Max: 0, Note: "KIP-966 paging"},                                                                     // DescribeTopicPartitions
	wire.Range{Key: 76, Min: 1, Max: 1, Note: "KIP-932 share groups; the simple assignor"},                                          // ShareGroupHeartbeat
	wire.Range{Key: 77, Min: 1, Max: 1},                                                                                             // ShareGroupDescribe
	wire.Range{Key: 78, Min: 1, Max: 2, Note: "share sessions; acquisition locks; share-partition state in the leader's memory"},    // ShareFetch
	wire.Range{Key: 79, Min: 1, Max: 2, Note: "accept, release, reject, renew"},                                                     // ShareAcknowledge
	wire.Range{Key: 83, Min: 0, Max: 0, Note: "from brokers only: served by the partition leader (no share coordinator)"},           // InitializeShareGroupState
	wire.Range{Key: 86, Min: 0, Max: 0, Note: "from brokers only: served by the partition leader"},                                  // DeleteShareGroupState
	wire.Range{Key: 87, Min: 0, Max: 1, Note: "from brokers only: served by the partition leader"},                                  // ReadShareGroupStateSummary
	wire.Range{Key: 90, Min: 0, Max: 1, Note: "lag not reported (-1)"},                                                              // DescribeShareGroupOffsets
	wire.Range{Key: 91, Min: 0, Max: 0},                                                                                             // AlterShareGroupOffsets
	wire.Range{Key: 92, Min: 0, Max: 0},                                                                                             // DeleteShareGroupOffsets
)
