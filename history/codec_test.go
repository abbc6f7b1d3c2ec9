package history_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/history/historytest"
	"pgregory.net/rapid"
)

// The history file's reference is encoding/json: Op.MarshalJSON and
// Op.UnmarshalJSON through the struct tags. Write and Read do the same
// without reflection; these tests hold them to it.

// referenceWrite is Write as encoding/json writes it.
func referenceWrite(t interface{ Fatal(...any) }, h history.History) []byte {
	var b bytes.Buffer
	for i := range h {
		line, err := json.Marshal(h[i])
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// referenceRead is Read as encoding/json reads it: nil if it refuses.
func referenceRead(b []byte) (history.History, bool) {
	var h history.History
	s := bufio.NewScanner(bytes.NewReader(b))
	s.Buffer(nil, len(b)+1)
	for s.Scan() {
		if len(bytes.TrimSpace(s.Bytes())) == 0 {
			continue
		}
		var op history.Op
		if err := json.Unmarshal(s.Bytes(), &op); err != nil {
			return nil, false
		}
		h = append(h, op)
	}
	return h, s.Err() == nil
}

// odd strings: what encoding/json escapes, or reads specially.
var oddStrings = []string{"", "p", "<tag>", "a&b", `q"uote`, `back\slash`, "tab\tnew\nline", "\x00\x1f", "é", "日本", "\u2028\u2029",
	"\xff\xfe invalid", "\xed\xa0\x80 surrogate", "\x7f", "/slash", "emoji 🎉"}

func drawString(t *rapid.T, label string) string {
	if rapid.Bool().Draw(t, label+"-odd") {
		return rapid.SampledFrom(oddStrings).Draw(t, label)
	}
	return rapid.StringMatching(`[a-z0-9-]{0,6}`).Draw(t, label)
}

func drawTP(t *rapid.T) history.TopicPartition {
	return history.TopicPartition{Topic: drawString(t, "topic"), Partition: rapid.Int32().Draw(t, "partition")}
}

func drawSlice[T any](t *rapid.T, label string, draw func(*rapid.T) T) []T {
	switch rapid.IntRange(0, 3).Draw(t, label+"-shape") {
	case 0:
		return nil
	case 1:
		return []T{}
	}
	n := rapid.IntRange(1, 3).Draw(t, label+"-len")
	out := make([]T, n)
	for i := range out {
		out[i] = draw(t)
	}
	return out
}

func drawMessage(t *rapid.T) history.Message {
	return history.Message{Key: drawString(t, "key"), Value: drawString(t, "value"), Source: drawString(t, "source")}
}

func drawRecord(t *rapid.T) history.Record {
	return history.Record{Offset: rapid.Int64().Draw(t, "offset"), Message: drawMessage(t)}
}

func drawOffset(t *rapid.T) history.PartitionOffset {
	return history.PartitionOffset{TP: drawTP(t), Offset: rapid.Int64().Draw(t, "offset")}
}

func drawStrings(t *rapid.T) []string {
	return drawSlice(t, "strings", func(t *rapid.T) string { return drawString(t, "s") })
}

// drawOp is any operation the types can hold, every payload possible at
// once (the format does not enforce one; Validate does).
func drawOp(t *rapid.T) history.Op {
	op := history.Op{ID: history.ID(rapid.Int().Draw(t, "id")), Process: drawString(t, "process"), Node: drawString(t, "node"),
		Kind: history.Kind(drawString(t, "kind")), Call: rapid.Int64().Draw(t, "call"), Return: rapid.Int64().Draw(t, "return"),
		Outcome: history.Outcome(drawString(t, "outcome")), Error: drawString(t, "error")}
	if rapid.Bool().Draw(t, "never") {
		op.Return = history.Never
	}
	some := func(label string) bool { return rapid.IntRange(0, 4).Draw(t, label) == 0 }
	if some("send") {
		op.Send = &history.Send{TP: drawTP(t), Messages: drawSlice(t, "messages", drawMessage), Offset: rapid.Int64().Draw(t, "offset"),
			Txn: history.ID(rapid.IntRange(0, 3).Draw(t, "txn"))}
	}
	if some("poll") {
		op.Poll = &history.Poll{Group: drawString(t, "group"), Isolation: history.Isolation(drawString(t, "isolation")),
			Rebalanced: rapid.Bool().Draw(t, "rebalanced"), Fetched: drawSlice(t, "fetched", func(t *rapid.T) history.Fetch {
				f := history.Fetch{TP: drawTP(t), From: rapid.Int64().Draw(t, "from"), Records: drawSlice(t, "records", drawRecord)}
				if rapid.Bool().Draw(t, "last-stable") {
					ls := rapid.Int64Range(-1, 5).Draw(t, "ls")
					f.LastStable = &ls
				}
				return f
			})}
	}
	if some("assign") {
		op.Assign = &history.Assign{Partitions: drawSlice(t, "partitions", drawTP)}
	}
	if some("subscribe") {
		op.Subscribe = &history.Subscribe{Group: drawString(t, "group"), Topics: drawStrings(t)}
	}
	if some("rebalance") {
		op.Rebalance = &history.Rebalance{Group: drawString(t, "group"), Assigned: drawSlice(t, "assigned", drawTP)}
	}
	if some("seek") {
		op.Seek = &history.Seek{Offsets: drawSlice(t, "offsets", drawOffset)}
	}
	if some("commit") {
		op.Commit = &history.Commit{Group: drawString(t, "group"), Offsets: drawSlice(t, "offsets", drawOffset)}
	}
	if some("offset-fetch") {
		op.OffsetFetch = &history.OffsetFetch{Group: drawString(t, "group"), Offsets: drawSlice(t, "offsets", drawOffset), Final: rapid.Bool().Draw(t, "final")}
	}
	if some("txn") {
		op.Txn = &history.Txn{TransactionalID: drawString(t, "tid"), Group: drawString(t, "group"), Offsets: drawSlice(t, "offsets", drawOffset),
			EndCall: rapid.Int64Range(-1, 3).Draw(t, "end")}
	}
	if some("sink-write") {
		op.SinkWrite = &history.SinkWrite{Sink: drawString(t, "sink"), Outputs: drawSlice(t, "outputs", drawMessage), Offsets: drawSlice(t, "offsets", drawOffset)}
	}
	if some("final-read") {
		op.FinalRead = &history.FinalRead{Sink: drawString(t, "sink"), TP: drawTP(t), Isolation: history.Isolation(drawString(t, "isolation")),
			From: rapid.Int64().Draw(t, "from"), Output: rapid.Bool().Draw(t, "output"), Records: drawSlice(t, "records", drawRecord),
			Items: drawSlice(t, "items", drawMessage), Offsets: drawSlice(t, "offsets", drawOffset)}
	}
	if some("nemesis") {
		op.Nemesis = &history.Nemesis{Description: drawString(t, "description"), Nodes: drawStrings(t)}
	}
	if some("replica") {
		op.Replica = &history.Replica{TP: drawTP(t), Broker: drawString(t, "broker"), Leader: rapid.Bool().Draw(t, "leader"),
			InISR: rapid.Bool().Draw(t, "in-isr"), Online: rapid.Bool().Draw(t, "online"), HighWatermark: rapid.Int64().Draw(t, "hw"),
			Batches: drawSlice(t, "batches", func(t *rapid.T) history.ReplicaBatch {
				return history.ReplicaBatch{Base: rapid.Int64().Draw(t, "base"), Last: rapid.Int64().Draw(t, "last"), Epoch: rapid.Int32().Draw(t, "epoch"),
					CRC: rapid.Uint32().Draw(t, "crc"), Producer: rapid.Int64().Draw(t, "producer"), ProducerEpoch: rapid.Int16().Draw(t, "pe"),
					Sequence: rapid.Int32().Draw(t, "seq"), Control: rapid.Bool().Draw(t, "control")}
			}),
			Epochs: drawSlice(t, "epochs", func(t *rapid.T) history.ReplicaEpoch {
				return history.ReplicaEpoch{Epoch: rapid.Int32().Draw(t, "epoch"), Start: rapid.Int64().Draw(t, "start")}
			}),
			Stopped: drawString(t, "stopped")}
	}
	return op
}

func TestPropertyWriteWritesWhatEncodingJSONWritesAndReadReadsIt(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		h := history.History(rapid.SliceOfN(rapid.Custom(drawOp), 1, 4).Draw(t, "ops"))
		var got bytes.Buffer
		if err := h.Write(&got); err != nil {
			t.Fatal(err)
		}
		want := referenceWrite(t, h)
		if !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("Write wrote\n%s\nencoding/json writes\n%s", got.Bytes(), want)
		}
		ref, ok := referenceRead(want)
		if !ok {
			t.Fatalf("encoding/json refuses what it wrote:\n%s", want)
		}
		back, err := history.Read(bytes.NewReader(want))
		if err != nil {
			t.Fatalf("Read refuses what Write wrote: %v\n%s", err, want)
		}
		if !reflect.DeepEqual(back, ref) {
			t.Fatalf("Read read\n%#v\nencoding/json reads\n%#v", back, ref)
		}
	})
}

func TestWriteWritesWhatEncodingJSONWritesForGeneratedHistories(t *testing.T) {
	for seed := uint64(0); seed < 10; seed++ {
		h := historytest.Log(historytest.DefaultLogConfig(500, 3, 8), rand.New(rand.NewPCG(seed, 0)))
		h = append(h, historytest.Pipeline(historytest.PipelineConfig{Partitions: 2, Producers: 2, Messages: 30, LatencyMax: 50}, rand.New(rand.NewPCG(seed, 1)))...)
		var got bytes.Buffer
		if err := h.Write(&got); err != nil {
			t.Fatal(err)
		}
		if want := referenceWrite(t, h); !bytes.Equal(got.Bytes(), want) {
			t.Fatalf("seed %d: Write differs from encoding/json", seed)
		}
	}
}

// Read is stricter than encoding/json in what it accepts, never looser,
// and reads what it accepts as encoding/json does.
func TestReadRefusesWhatTheFormatDoesNot(t *testing.T) {
	valid := `{"id":1,"process":"p","kind":"nemesis","call":0,"return":1,"outcome":"ok","nemesis":{"description":"x"}}`
	for name, line := range map[string]string{
		"a field twice":            `{"id":1,"id":2,"process":"p","kind":"nemesis","call":0,"outcome":"ok","nemesis":{"description":"x"}}`,
		"a name in another case":   strings.Replace(valid, `"call"`, `"Call"`, 1),
		"null for an operation":    `null`,
		"a fraction for an offset": strings.Replace(valid, `"call":0`, `"call":0.5`, 1),
		"a string for a number":    strings.Replace(valid, `"call":0`, `"call":"0"`, 1),
		"trailing bytes":           valid + `x`,
		"a NUL after the object":   valid + "\x00",
		"an unterminated string":   `{"id":1,"process":"p`,
		"a control character":      strings.Replace(valid, `"p"`, "\"p\x01\"", 1),
		"a leading zero":           strings.Replace(valid, `"call":0`, `"call":01`, 1),
		"a crc below zero":         `{"id":1,"process":"p","kind":"replica","call":0,"outcome":"ok","replica":{"tp":{"topic":"t","partition":0},"broker":"b","high_watermark":0,"batches":[{"base":0,"last":0,"epoch":0,"crc":-1,"producer":0,"producer_epoch":0,"sequence":0}]}}`,
		"an int32 overflow":        `{"id":1,"process":"p","kind":"assign","call":0,"outcome":"ok","assign":{"partitions":[{"topic":"t","partition":2147483648}]}}`,
	} {
		if _, err := history.Read(strings.NewReader(line + "\n")); err == nil {
			t.Errorf("%s: Read accepted %s", name, line)
		}
	}
	// Escapes, invalid UTF-8, whitespace and null read as encoding/json
	// reads them.
	for _, line := range []string{
		`{"id":1,"process":"p\u00e9\n\"","kind":"nemesis","call":0,"outcome":"ok","nemesis":{"description":"\ud83c\udf89 \ud800"}}`,
		"{\"id\":1,\"process\":\"\xff\",\"kind\":\"nemesis\",\"call\":0,\"outcome\":\"ok\",\"nemesis\":{\"description\":\"x\"}}",
		" { \"id\" : 1 , \"process\" : \"p\" ,\t\"kind\":\"send\",\"call\":-0,\"return\":null,\"outcome\":\"info\",\"send\":{\"tp\":{\"topic\":\"t\",\"partition\":0},\"messages\":[],\"offset\":-1}}\r",
		`{"id":1,"process":"p","kind":"poll","call":0,"outcome":"ok","poll":{"isolation":"read_committed","fetched":[{"tp":null,"from":0,"records":null,"last_stable":7}]},"send":null}`,
		`{"\u0069d":1,"process":"p","kind":"nemesis","call":0,"outcome":"ok","nemesis":{"description":"x"}}`,
	} {
		got, err := history.Read(strings.NewReader(line))
		if err != nil {
			t.Errorf("Read refused %s: %v", line, err)
			continue
		}
		if want, ok := referenceRead([]byte(line)); !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Read read %#v, encoding/json %#v (ok %v)", line, got, want, ok)
		}
	}
}

// FuzzRead: whatever the bytes, Read does not panic, and what it accepts
// encoding/json reads the same way.
func FuzzRead(f *testing.F) {
	h := historytest.Log(historytest.DefaultLogConfig(40, 2, 3), rand.New(rand.NewPCG(1, 0)))
	h = append(h, historytest.Pipeline(historytest.PipelineConfig{Partitions: 2, Producers: 1, Messages: 5, LatencyMax: 50}, rand.New(rand.NewPCG(1, 1)))...)
	for i := range h {
		line, _ := json.Marshal(h[i])
		f.Add(line)
	}
	f.Add([]byte(`{"id":1,"process":"p\u00e9","kind":"replica","call":0,"outcome":"ok","replica":{"tp":{"topic":"t","partition":0},"broker":"b","high_watermark":0,"batches":[{"base":0,"last":0,"epoch":0,"crc":4294967295,"producer":-1,"producer_epoch":-1,"sequence":-1,"control":true}],"epochs":[{"epoch":1,"start":0}]}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := history.Read(bytes.NewReader(b))
		if err != nil {
			return
		}
		want, ok := referenceRead(b)
		if !ok {
			t.Fatalf("Read accepted what encoding/json refuses:\n%q", b)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("Read read %#v\nencoding/json %#v\nfrom %q", got, want, b)
		}
	})
}

// BenchmarkHistoryFile writes and reads a history of 100,000 operations
// as a history file, reporting MB/s and operations a second; "reference"
// is encoding/json, the format's definition.
func BenchmarkHistoryFile(b *testing.B) {
	h := historytest.Log(historytest.DefaultLogConfig(100_000, 8, 8), rand.New(rand.NewPCG(1, 0)))
	var file bytes.Buffer
	if err := h.Write(&file); err != nil {
		b.Fatal(err)
	}
	size := int64(file.Len())
	report := func(b *testing.B) {
		b.SetBytes(size)
		b.ReportMetric(float64(len(h))*float64(b.N)/b.Elapsed().Seconds(), "ops/s")
	}
	b.Run("write", func(b *testing.B) {
		for b.Loop() {
			if err := h.Write(&bytes.Buffer{}); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	b.Run("write/reference", func(b *testing.B) {
		for b.Loop() {
			referenceWrite(b, h)
		}
		report(b)
	})
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			if _, err := history.Read(bytes.NewReader(file.Bytes())); err != nil {
				b.Fatal(err)
			}
		}
		report(b)
	})
	b.Run("read/reference", func(b *testing.B) {
		for b.Loop() {
			if _, ok := referenceRead(file.Bytes()); !ok {
				b.Fatal("refused")
			}
		}
		report(b)
	})
}
