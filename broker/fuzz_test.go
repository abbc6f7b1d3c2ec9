package broker_test

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/broker"
	"github.com/kafkasim/kafkasim/broker/config"
	"github.com/kafkasim/kafkasim/broker/controller"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/broker/record"
	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/broker/wire"
	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/sim"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Fuzz modes: bits of the first fuzz argument.
const (
	// fuzzFixCRC re-encodes a Produce request with every record batch's
	// CRC recomputed, so that hostile batches reach the log's validation
	// instead of stopping at the checksum — as a hostile client's would.
	fuzzFixCRC = 1 << iota
	// fuzzTwice sends the frame twice on one connection (pipelined).
	fuzzTwice
)

// fuzzCreatedPartitionsMax is the most partitions an input may create.
const fuzzCreatedPartitionsMax = 1000

// createsPartitions is how many partitions frame, a CreateTopics request
// that is not ValidateOnly, asks for; 0 for any other frame.
func createsPartitions(frame []byte) int {
	_, body, err := wire.ParseRequest(frame, broker.Versions)
	req, ok := body.(*kmsg.CreateTopicsRequest)
	if err != nil || !ok || req.ValidateOnly {
		return 0
	}
	n := 0
	for _, t := range req.Topics {
		n += max(int(t.NumPartitions), 1)
	}
	return n
}

// fuzzAllocBytesMax bounds what serving one hostile frame may allocate,
// beyond fuzzAllocPerByte for every byte of it: a frame that claims huge
// counts or lengths must not make the broker allocate what it claims.
const (
	fuzzAllocBytesMax = 64 << 20
	fuzzAllocPerByte  = 256
)

// FuzzBrokerRequest sends one arbitrary frame to a broker of a simulated
// cluster (a controller and one broker, hosting topic "t" with records).
// Whatever the frame, decoding and handling it must not panic anywhere in
// the world (a panic is a *sim.PanicError), must not allocate without
// bound, must answer with the request's correlation id or close the
// connection (or, for a long poll or acks=0, stay quiet), and must leave
// the broker serving a well-formed Metadata request afterwards. Answers to
// valid requests must parse and keep what real clients rely on (see
// checkAnswer); one CreateTopics request creates at most
// controller.PartitionsPerRequestMax partitions.
//
// Not checked: what a well-formed but hostile request does to the cluster's
// state. A broker learns metadata only from the controllers' log (it serves
// no UpdateMetadata, as KRaft brokers do not; the updatemetadata seed checks
// it is refused). This broker has one listener, so it grants CLUSTER_ACTION
// to every connection and the fuzzer reaches the inter-broker handlers too
// (follower fetches, WriteTxnMarkers); with an inter-broker listener of its
// own a client connection is refused them
// (TestAClientConnectionCannotReplicateOrWriteTransactionMarkers).
//
// The seed corpus in testdata/fuzz/FuzzBrokerRequest holds a valid request
// of every API the broker serves (write it again with
// KAFKASIM_WRITE_FUZZ_SEEDS=1 go test -run TestWriteFuzzSeeds ./broker).
func FuzzBrokerRequest(f *testing.F) {
	f.Fuzz(func(t *testing.T, mode byte, frame []byte) {
		if mode&fuzzFixCRC != 0 {
			frame = fixProduceCRCs(frame)
		}
		if n := createsPartitions(frame); n > fuzzCreatedPartitionsMax {
			// Legitimate work, bounded by controller.PartitionsPerRequestMax,
			// but seconds of it in the simulator: it would only slow the
			// fuzzer down. A ValidateOnly seed checks the bound itself.
			t.Skipf("creates %d partitions", n)
		}
		fw := newFuzzWorld(t)
		sends := 1
		if mode&fuzzTwice != 0 {
			sends = 2
		}

		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		fw.w.Node("client").Exec(func() {
			c := fw.client
			c.raw = c.e.Dial("broker-0")
			for range sends {
				c.e.Send(c.raw, frame)
			}
		})
		_, err := fw.w.RunWhile(func() bool { return !fw.client.closed && len(fw.client.replies) < sends }, 10*time.Second)
		runtime.ReadMemStats(&after)
		if err != nil {
			t.Fatalf("serving a %d-byte frame: %v\n%s", len(frame), err, panicStack(err))
		}
		if alloc := after.TotalAlloc - before.TotalAlloc; alloc > uint64(fuzzAllocBytesMax+fuzzAllocPerByte*len(frame)) {
			t.Fatalf("serving a %d-byte frame allocated %d bytes", len(frame), alloc)
		}
		if len(frame) >= 8 {
			want := int32(binary.BigEndian.Uint32(frame[4:]))
			for _, r := range fw.client.replies {
				if got, err := wire.ResponseCorrelation(r); err != nil || got != want {
					t.Fatalf("answer with correlation id %d (%v), the request's is %d", got, err, want)
				}
			}
		}
		if _, req, err := wire.ParseRequest(frame, broker.Versions); err == nil {
			for _, r := range fw.client.replies {
				checkAnswer(t, req, r)
			}
		}

		// Timers run (checkpoints, ISR checks, long polls expire), and the
		// broker still serves others.
		if err := fw.w.RunFor(3 * time.Second); err != nil {
			t.Fatalf("after the frame: %v\n%s", err, panicStack(err))
		}
		var answered bool
		fw.w.Node("client").Exec(func() {
			cl := rpc.NewClient(fw.client.rt, "broker-0", rpc.ClientOptions{ClientID: "after"})
			cl.Do(kmsg.NewPtrMetadataRequest(), 5*time.Second, func(_ kmsg.Response, err error) { answered = err == nil })
		})
		if _, err := fw.w.RunWhile(func() bool { return !answered }, 10*time.Second); err != nil {
			t.Fatalf("after the frame: %v\n%s", err, panicStack(err))
		}
		if !answered {
			t.Fatalf("after a %d-byte frame the broker no longer answers Metadata", len(frame))
		}
	})
}

// checkAnswer checks what real clients rely on in the answer to a valid
// request: it parses, and a Fetch answer carries a record set for every
// partition, empty rather than null (librdkafka refuses a null one as
// "invalid MessageSetSize -1"; Kafka always sends one).
func checkAnswer(t *testing.T, req kmsg.Request, answer []byte) {
	resp, err := wire.ParseResponse(answer, req)
	if err != nil {
		t.Fatalf("answer to a valid %s v%d does not parse: %v", kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	if cr, ok := resp.(*kmsg.CreateTopicsResponse); ok {
		n := 0
		for _, rt := range cr.Topics {
			if rt.ErrorCode == 0 {
				n += int(rt.NumPartitions)
			}
		}
		if n > controller.PartitionsPerRequestMax {
			t.Fatalf("one CreateTopics request created %d partitions, more than %d", n, controller.PartitionsPerRequestMax)
		}
	}
	if fr, ok := resp.(*kmsg.FetchResponse); ok {
		for _, rt := range fr.Topics {
			for _, rp := range rt.Partitions {
				if rp.RecordBatches == nil {
					t.Fatalf("Fetch v%d answer for %s/%d has null records (error code %d)", req.GetVersion(), rt.Topic, rp.Partition, rp.ErrorCode)
				}
			}
		}
	}
}

func panicStack(err error) string {
	if pe, ok := err.(*sim.PanicError); ok {
		return pe.Stack
	}
	return ""
}

// fuzzClient is a client process: raw frames on one connection, and an
// rpc router for setting the world up.
type fuzzClient struct {
	e       env.Env
	rt      *rpc.Router
	raw     env.ConnID
	replies [][]byte
	closed  bool
}

func (p *fuzzClient) Start(e env.Env) { p.e = e; p.rt = rpc.NewRouter(e, nil) }
func (p *fuzzClient) Connected(c env.ConnID, peer string, inbound bool) {
	if c != p.raw {
		p.rt.Connected(c, peer, inbound)
	}
}
func (p *fuzzClient) Received(c env.ConnID, frame []byte) {
	if c == p.raw {
		p.replies = append(p.replies, frame)
		return
	}
	p.rt.Received(c, frame)
}
func (p *fuzzClient) Closed(c env.ConnID) {
	if c == p.raw {
		p.closed = true
		return
	}
	p.rt.Closed(c)
}

type fuzzWorld struct {
	w      *sim.World
	client *fuzzClient
}

// fuzzTopic is the topic the fuzz world hosts, with records in partition 0.
var fuzzTopic = metadata.TopicPartition{Topic: "t", Partition: 0}

// newFuzzWorld boots a controller and one broker hosting topic "t" (two
// partitions, records in the first) — the same world for every input, so
// that a failure replays.
func newFuzzWorld(t testing.TB) *fuzzWorld {
	cfg := config.Default()
	cfg.DefaultReplicationFactor = 1
	cfg.OffsetsTopicReplicationFactor = 1
	cfg.TransactionTopicReplicationFactor = 1
	w := sim.New(sim.Options{Seed: 1})
	w.AddNode("controller", func() env.Process { return controller.New(cfg) }).Start()
	w.AddNode("broker-0", func() env.Process {
		return broker.New(broker.Options{ID: 0, Controllers: map[int32]string{controller.ID: "controller"}, ClusterID: "fuzz", Cluster: cfg})
	}).Start()
	fw := &fuzzWorld{w: w, client: &fuzzClient{}}
	w.AddNode("client", func() env.Process { return fw.client }).Start()
	b := func() *broker.Broker { p, _ := w.Node("broker-0").Process().(*broker.Broker); return p }
	if ok, err := w.RunWhile(func() bool {
		if b() == nil || b().Image() == nil {
			return true
		}
		_, ok := b().Image().Broker(0)
		return !ok
	}, 10*time.Second); err != nil || !ok {
		t.Fatalf("the broker did not register: %v", err)
	}
	done := false
	w.Node("client").Exec(func() {
		cl := rpc.NewClient(fw.client.rt, "broker-0", rpc.ClientOptions{ClientID: "setup"})
		create := kmsg.NewPtrCreateTopicsRequest()
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = fuzzTopic.Topic, 2, 1
		create.Topics = append(create.Topics, rt)
		cl.Do(create, 5*time.Second, func(kmsg.Response, error) { done = true })
	})
	if ok, err := w.RunWhile(func() bool { return !done || !b().Leads(fuzzTopic) }, 10*time.Second); err != nil || !ok {
		t.Fatalf("topic %s has no leader: %v", fuzzTopic.Topic, err)
	}
	done = false
	w.Node("client").Exec(func() {
		cl := rpc.NewClient(fw.client.rt, "broker-0", rpc.ClientOptions{ClientID: "setup"})
		cl.Do(fuzzProduce(3, -1, record.Values(w.Now().UnixMilli(), []byte("a"), []byte("b"), []byte("c"))), 5*time.Second,
			func(kmsg.Response, error) { done = true })
	})
	if ok, err := w.RunWhile(func() bool { return !done }, 10*time.Second); err != nil || !ok {
		t.Fatalf("setup produce: %v", err)
	}
	// Ask for group g's coordinator until there is one, so that fuzzed
	// group requests reach the offsets partition.
	found := false
	for range 20 {
		done = false
		w.Node("client").Exec(func() {
			cl := rpc.NewClient(fw.client.rt, "broker-0", rpc.ClientOptions{ClientID: "setup"})
			req := kmsg.NewPtrFindCoordinatorRequest()
			req.CoordinatorKey, req.CoordinatorKeys = "g", []string{"g"}
			cl.Do(req, 5*time.Second, func(r kmsg.Response, err error) {
				done = true
				if fc, ok := r.(*kmsg.FindCoordinatorResponse); ok && err == nil {
					found = fc.ErrorCode == 0 && (len(fc.Coordinators) == 0 || fc.Coordinators[0].ErrorCode == 0)
				}
			})
		})
		if _, err := w.RunWhile(func() bool { return !done }, 10*time.Second); err != nil {
			t.Fatalf("setup FindCoordinator: %v", err)
		}
		if found {
			return fw
		}
		if err := w.RunFor(200 * time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	t.Fatalf("group g has no coordinator")
	return nil
}

func fuzzProduce(version, acks int16, batch record.Batch) *kmsg.ProduceRequest {
	req := kmsg.NewPtrProduceRequest()
	req.Version, req.Acks, req.TimeoutMillis = version, acks, 1000
	rt := kmsg.NewProduceRequestTopic()
	rt.Topic = fuzzTopic.Topic
	rp := kmsg.NewProduceRequestTopicPartition()
	rp.Partition, rp.Records = fuzzTopic.Partition, batch
	rt.Partitions = append(rt.Partitions, rp)
	req.Topics = append(req.Topics, rt)
	return req
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// fixProduceCRCs returns frame with the CRC of every record batch in a
// Produce request recomputed; other frames come back as they are.
func fixProduceCRCs(frame []byte) []byte {
	h, body, err := wire.ParseRequest(frame, broker.Versions)
	req, ok := body.(*kmsg.ProduceRequest)
	if err != nil || !ok {
		return frame
	}
	for i := range req.Topics {
		for j := range req.Topics[i].Partitions {
			rs := req.Topics[i].Partitions[j].Records
			for off := 0; off+record.BatchHeaderSize <= len(rs); {
				n := int(int32(binary.BigEndian.Uint32(rs[off+8:]))) + record.LogOverhead
				if n < record.BatchHeaderSize || off+n > len(rs) {
					break
				}
				binary.BigEndian.PutUint32(rs[off+17:], crc32.Checksum(rs[off+21:off+n], castagnoli))
				off += n
			}
		}
	}
	clientID := ""
	if h.ClientID != nil {
		clientID = *h.ClientID
	}
	return wire.AppendRequest(nil, req, h.CorrelationID, clientID)
}

// TestWriteFuzzSeeds writes the seed corpus: a valid request of every API
// and version family the broker serves, and a few broken ones. It runs only
// when asked to (KAFKASIM_WRITE_FUZZ_SEEDS=1).
func TestWriteFuzzSeeds(t *testing.T) {
	if os.Getenv("KAFKASIM_WRITE_FUZZ_SEEDS") == "" {
		t.Skip("writes testdata/fuzz/FuzzBrokerRequest; set KAFKASIM_WRITE_FUZZ_SEEDS=1 to run")
	}
	dir := filepath.Join("testdata", "fuzz", "FuzzBrokerRequest")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, s := range fuzzSeeds() {
		body := fmt.Sprintf("go test fuzz v1\nbyte(%q)\n[]byte(%q)\n", s.mode, s.frame)
		if err := os.WriteFile(filepath.Join(dir, "seed-"+name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type fuzzSeed struct {
	mode  byte
	frame []byte
}

func fuzzSeeds() map[string]fuzzSeed {
	seeds := map[string]fuzzSeed{}
	add := func(name string, mode byte, req kmsg.Request) {
		seeds[name] = fuzzSeed{mode, wire.AppendRequest(nil, req, 7, "fuzz")}
	}
	batch := func() record.Batch { return record.Values(1_767_225_600_000, []byte("x"), []byte("yz")) }
	for _, v := range []int16{3, 7, 9, 12} {
		add(fmt.Sprintf("produce-v%d", v), 0, fuzzProduce(v, -1, batch()))
	}
	add("produce-acks0", 0, fuzzProduce(9, 0, batch()))
	add("produce-acks1-twice", fuzzTwice, fuzzProduce(9, 1, batch()))
	h := record.NewHeader()
	h.ProducerID, h.ProducerEpoch, h.BaseSequence = 1000, 0, 0
	idem, _ := record.Encode(h, []record.Record{{Value: []byte("idempotent")}})
	add("produce-idempotent-fixcrc", fuzzFixCRC, fuzzProduce(9, -1, idem))
	gz := record.NewHeader()
	gz.Attributes = record.Attributes(record.CompressionGzip)
	gzb, _ := record.Encode(gz, []record.Record{{Key: []byte("k"), Value: []byte("v")}})
	add("produce-gzip-fixcrc", fuzzFixCRC, fuzzProduce(12, -1, gzb))

	for _, v := range []int16{4, 11, 12} {
		req := kmsg.NewPtrFetchRequest()
		req.Version = v
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 100, 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = fuzzTopic.Topic
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, 0, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		add(fmt.Sprintf("fetch-v%d", v), 0, req)
	}
	for _, v := range []int16{13, 17} {
		req := kmsg.NewPtrFetchRequest()
		req.Version = v
		req.ReplicaState.ID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 100, 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.TopicID = [16]byte{1} // the fuzz world's topic has a random id: unknown
		rp := kmsg.NewFetchRequestTopicPartition()
		rp.Partition, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = 0, 1<<20, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		add(fmt.Sprintf("fetch-v%d-by-id", v), 0, req)
	}
	for _, v := range []int16{4, 11} {
		// At the log end, and of a partition the broker does not host.
		req := kmsg.NewPtrFetchRequest()
		req.Version = v
		req.ReplicaID, req.MaxWaitMillis, req.MinBytes, req.MaxBytes = -1, 50, 1, 1<<20
		rt := kmsg.NewFetchRequestTopic()
		rt.Topic = fuzzTopic.Topic
		for _, p := range []int32{0, 7} {
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition, rp.FetchOffset, rp.PartitionMaxBytes, rp.CurrentLeaderEpoch = p, 3, 1<<20, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		req.Topics = append(req.Topics, rt)
		add(fmt.Sprintf("fetch-v%d-at-end", v), 0, req)
	}
	for _, v := range []int16{1, 4, 9, 12} {
		req := kmsg.NewPtrMetadataRequest()
		req.Version = v
		if v >= 4 {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(fuzzTopic.Topic)
			req.Topics = append(req.Topics, rt)
		}
		add(fmt.Sprintf("metadata-v%d", v), 0, req)
	}
	for _, v := range []int16{1, 8} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version, req.ReplicaID = v, -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = fuzzTopic.Topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		add(fmt.Sprintf("listoffsets-v%d", v), 0, req)
	}
	for _, ts := range []int64{-3, -5, 0, 1_767_225_600_000} {
		req := kmsg.NewPtrListOffsetsRequest()
		req.Version, req.ReplicaID = 10, -1
		rt := kmsg.NewListOffsetsRequestTopic()
		rt.Topic = fuzzTopic.Topic
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = 0, ts, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		add(fmt.Sprintf("listoffsets-v10-at-%d", ts), 0, req)
	}
	for _, v := range []int16{2, 4} {
		req := kmsg.NewPtrOffsetForLeaderEpochRequest()
		req.Version, req.ReplicaID = v, -1
		rt := kmsg.NewOffsetForLeaderEpochRequestTopic()
		rt.Topic = fuzzTopic.Topic
		rp := kmsg.NewOffsetForLeaderEpochRequestTopicPartition()
		rp.Partition, rp.CurrentLeaderEpoch, rp.LeaderEpoch = 0, -1, 1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		add(fmt.Sprintf("offsetforleaderepoch-v%d", v), 0, req)
	}
	for _, v := range []int16{0, 5, 7} {
		req := kmsg.NewPtrCreateTopicsRequest()
		req.Version, req.TimeoutMillis = v, 1000
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = "fresh", 3, 1
		req.Topics = append(req.Topics, rt)
		add(fmt.Sprintf("createtopics-v%d", v), 0, req)
	}
	tooMany := kmsg.NewPtrCreateTopicsRequest()
	tooMany.Version, tooMany.TimeoutMillis, tooMany.ValidateOnly = 5, 1000, true
	for i := range 3 {
		rt := kmsg.NewCreateTopicsRequestTopic()
		rt.Topic, rt.NumPartitions, rt.ReplicationFactor = fmt.Sprintf("huge-%d", i), 5000, 1
		tooMany.Topics = append(tooMany.Topics, rt)
	}
	add("createtopics-validateonly-over-budget", 0, tooMany)
	for _, v := range []int16{0, 4} {
		req := kmsg.NewPtrInitProducerIDRequest()
		req.Version, req.TransactionTimeoutMillis, req.ProducerID, req.ProducerEpoch = v, 60_000, -1, -1
		add(fmt.Sprintf("initproducerid-v%d", v), 0, req)
		txn := kmsg.NewPtrInitProducerIDRequest()
		txn.Version, txn.TransactionTimeoutMillis, txn.ProducerID, txn.ProducerEpoch = v, 60_000, -1, -1
		txn.TransactionalID = kmsg.StringPtr("tx")
		add(fmt.Sprintf("initproducerid-transactional-v%d", v), 0, txn)
	}
	for _, v := range []int16{0, 4} {
		req := kmsg.NewPtrFindCoordinatorRequest()
		req.Version, req.CoordinatorKey, req.CoordinatorKeys = v, "g", []string{"g"}
		add(fmt.Sprintf("findcoordinator-v%d", v), 0, req)
	}
	for _, v := range []int16{2, 8, 9} {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Version, req.Group, req.Generation = v, "g", -1
		rt := kmsg.NewOffsetCommitRequestTopic()
		rt.Topic = fuzzTopic.Topic
		rp := kmsg.NewOffsetCommitRequestTopicPartition()
		rp.Partition, rp.Offset, rp.LeaderEpoch = 0, 2, -1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		add(fmt.Sprintf("offsetcommit-v%d", v), 0, req)
	}
	for _, v := range []int16{1, 7, 8} {
		req := kmsg.NewPtrOffsetFetchRequest()
		req.Version, req.Group = v, "g"
		rt := kmsg.NewOffsetFetchRequestTopic()
		rt.Topic, rt.Partitions = fuzzTopic.Topic, []int32{0}
		req.Topics = append(req.Topics, rt)
		if v >= 8 {
			g := kmsg.NewOffsetFetchRequestGroup()
			g.Group = "g"
			gt := kmsg.NewOffsetFetchRequestGroupTopic()
			gt.Topic, gt.Partitions = fuzzTopic.Topic, []int32{0}
			g.Topics = append(g.Topics, gt)
			req.Groups = append(req.Groups, g)
		}
		add(fmt.Sprintf("offsetfetch-v%d", v), 0, req)
	}
	for _, v := range []int16{0, 3, 4} {
		req := kmsg.NewPtrApiVersionsRequest()
		req.Version, req.ClientSoftwareName, req.ClientSoftwareVersion = v, "fuzz", "1"
		add(fmt.Sprintf("apiversions-v%d", v), 0, req)
	}
	um := kmsg.NewPtrUpdateMetadataRequest()
	um.Version, um.ControllerID, um.ControllerEpoch, um.BrokerEpoch = 7, controller.ID, 1, 1
	add("updatemetadata", 0, um)
	join := kmsg.NewPtrJoinGroupRequest()
	join.Group, join.ProtocolType, join.SessionTimeoutMillis = "g", "consumer", 10_000
	add("joingroup-unsupported", 0, join)

	for _, v := range []int16{0, 1, 3, 4} {
		req := kmsg.NewPtrDescribeConfigsRequest()
		req.Version, req.IncludeSynonyms, req.IncludeDocumentation = v, true, true
		for _, res := range []struct {
			typ  kmsg.ConfigResourceType
			name string
		}{{kmsg.ConfigResourceTypeTopic, "t"}, {kmsg.ConfigResourceTypeBroker, "0"}} {
			rr := kmsg.NewDescribeConfigsRequestResource()
			rr.ResourceType, rr.ResourceName = res.typ, res.name
			req.Resources = append(req.Resources, rr)
		}
		add(fmt.Sprintf("describeconfigs-v%d", v), 0, req)
	}
	for _, v := range []int16{0, 2} {
		req := kmsg.NewPtrAlterConfigsRequest()
		req.Version = v
		rr := kmsg.NewAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
		c := kmsg.NewAlterConfigsRequestResourceConfig()
		c.Name, c.Value = "min.insync.replicas", kmsg.StringPtr("1")
		rr.Configs = append(rr.Configs, c)
		req.Resources = append(req.Resources, rr)
		add(fmt.Sprintf("alterconfigs-v%d", v), 0, req)
	}
	for _, v := range []int16{0, 1} {
		req := kmsg.NewPtrIncrementalAlterConfigsRequest()
		req.Version = v
		rr := kmsg.NewIncrementalAlterConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, "t"
		c := kmsg.NewIncrementalAlterConfigsRequestResourceConfig()
		c.Name, c.Op, c.Value = "cleanup.policy", 2, kmsg.StringPtr("compact")
		rr.Configs = append(rr.Configs, c)
		req.Resources = append(req.Resources, rr)
		add(fmt.Sprintf("incrementalalterconfigs-v%d", v), 0, req)
	}

	for _, v := range []int16{0, 4, 5} {
		req := kmsg.NewPtrListGroupsRequest()
		req.Version, req.StatesFilter = v, []string{"Empty"}
		add(fmt.Sprintf("listgroups-v%d", v), 0, req)
		dg := kmsg.NewPtrDescribeGroupsRequest()
		dg.Version, dg.Groups = v, []string{"g", "h"}
		add(fmt.Sprintf("describegroups-v%d", v), 0, dg)
	}
	for _, v := range []int16{0, 2} {
		req := kmsg.NewPtrDeleteGroupsRequest()
		req.Version, req.Groups = v, []string{"g"}
		add(fmt.Sprintf("deletegroups-v%d", v), 0, req)
	}
	for _, v := range []int16{0, 2} {
		req := kmsg.NewPtrDeleteRecordsRequest()
		req.Version, req.TimeoutMillis = v, 100
		rt := kmsg.NewDeleteRecordsRequestTopic()
		rt.Topic = "t"
		rp := kmsg.NewDeleteRecordsRequestTopicPartition()
		rp.Offset = 1
		rt.Partitions = append(rt.Partitions, rp)
		req.Topics = append(req.Topics, rt)
		add(fmt.Sprintf("deleterecords-v%d", v), 0, req)
	}
	dp := kmsg.NewPtrDescribeProducersRequest()
	dpt := kmsg.NewDescribeProducersRequestTopic()
	dpt.Topic, dpt.Partitions = "t", []int32{0, 1, 7}
	dp.Topics = append(dp.Topics, dpt)
	add("describeproducers-v0", 0, dp)
	od := kmsg.NewPtrOffsetDeleteRequest()
	od.Group = "g"
	odt := kmsg.NewOffsetDeleteRequestTopic()
	odt.Topic = "t"
	odp := kmsg.NewOffsetDeleteRequestTopicPartition()
	odt.Partitions = append(odt.Partitions, odp)
	od.Topics = append(od.Topics, odt)
	add("offsetdelete-v0", 0, od)
	for _, v := range []int16{0, 1} {
		req := kmsg.NewPtrDescribeClusterRequest()
		req.Version, req.EndpointType = v, 1
		add(fmt.Sprintf("describecluster-v%d", v), 0, req)
	}

	for _, v := range []int16{1, 5, 6} {
		req := kmsg.NewPtrDeleteTopicsRequest()
		req.Version, req.TimeoutMillis = v, 100
		req.TopicNames = []string{"t", "t", "__consumer_offsets"}
		for _, n := range req.TopicNames {
			rt := kmsg.NewDeleteTopicsRequestTopic()
			rt.Topic = kmsg.StringPtr(n)
			req.Topics = append(req.Topics, rt)
		}
		byID := kmsg.NewDeleteTopicsRequestTopic()
		byID.TopicID = [16]byte{7}
		req.Topics = append(req.Topics, byID)
		add(fmt.Sprintf("deletetopics-v%d", v), 0, req)
	}
	for _, v := range []int16{0, 3} {
		req := kmsg.NewPtrCreatePartitionsRequest()
		req.Version, req.TimeoutMillis = v, 100
		rt := kmsg.NewCreatePartitionsRequestTopic()
		rt.Topic, rt.Count = "t", 3
		a := kmsg.NewCreatePartitionsRequestTopicAssignment()
		a.Replicas = []int32{0, 0}
		rt.Assignment = append(rt.Assignment, a, a)
		req.Topics = append(req.Topics, rt)
		add(fmt.Sprintf("createpartitions-v%d", v), 0, req)
	}

	dt := kmsg.NewPtrDescribeTransactionsRequest()
	dt.TransactionalIDs = []string{"t", ""}
	add("describetransactions-v0", 0, dt)
	for _, v := range []int16{0, 1} {
		req := kmsg.NewPtrListTransactionsRequest()
		req.Version, req.StateFilters, req.ProducerIDFilters, req.DurationFilterMillis = v, []string{"Ongoing", "x"}, []int64{1}, 10
		add(fmt.Sprintf("listtransactions-v%d", v), 0, req)
	}
	for _, v := range []int16{0, 2} {
		req := kmsg.NewPtrElectLeadersRequest()
		req.Version, req.ElectionType, req.TimeoutMillis = v, 1, 100
		rt := kmsg.NewElectLeadersRequestTopic()
		rt.Topic, rt.Partitions = "t", []int32{0, -1, 9}
		req.Topics = append(req.Topics, rt)
		add(fmt.Sprintf("electleaders-v%d", v), 0, req)
	}
	for _, v := range []int16{0, 4} {
		req := kmsg.NewPtrDescribeLogDirsRequest()
		req.Version = v
		rt := kmsg.NewDescribeLogDirsRequestTopic()
		rt.Topic, rt.Partitions = "t", []int32{0}
		req.Topics = append(req.Topics, rt)
		add(fmt.Sprintf("describelogdirs-v%d", v), 0, req)
	}
	dtp := kmsg.NewPtrDescribeTopicPartitionsRequest()
	dtp.ResponsePartitionLimit = 1
	dtp.Cursor = &kmsg.DescribeTopicPartitionsRequestCursor{Topic: "t", Partition: 0}
	dtpt := kmsg.NewDescribeTopicPartitionsRequestTopic()
	dtpt.Topic = "t"
	dtp.Topics = append(dtp.Topics, dtpt)
	add("describetopicpartitions-v0", 0, dtp)

	valid := seeds["metadata-v9"].frame
	seeds["truncated"] = fuzzSeed{0, valid[:len(valid)-3]}
	seeds["header-only"] = fuzzSeed{0, valid[:8]}
	seeds["empty"] = fuzzSeed{0, nil}
	return seeds
}
