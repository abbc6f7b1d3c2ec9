package metadata

import (
	"encoding/json"
	"reflect"
	"testing"

	"pgregory.net/rapid"
)

// jsonDecode is what DecodeRecords gave before the fast decoder, and
// still gives whenever the fast one declines.
func jsonDecode(data []byte) ([]Record, error) {
	var rs []Record
	err := json.Unmarshal(data, &rs)
	return rs, err
}

// agree fails t unless the fast decoder declines data or gives exactly
// what encoding/json gives.
func agree(t interface {
	Helper()
	Fatalf(string, ...any)
}, data []byte) (decoded bool) {
	t.Helper()
	got, ok := decodeRecords(data)
	if !ok {
		return false
	}
	want, err := jsonDecode(data)
	if err != nil {
		t.Fatalf("fast decoder took %q, which json refuses: %v", data, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("%q:\nfast %#v\njson %#v", data, got, want)
	}
	return true
}

func drawString(t *rapid.T, label string) string {
	return rapid.OneOf(
		rapid.Just(""),
		rapid.StringMatching(`[a-z0-9._:-]{1,12}`),
		rapid.String(), // escapes, <>&, U+2028, non-ASCII: json.Marshal escapes some
	).Draw(t, label)
}

func drawInt32s(t *rapid.T, label string) []int32 {
	if rapid.IntRange(0, 4).Draw(t, label+"-nil") == 0 {
		return nil
	}
	return rapid.SliceOfN(rapid.Int32(), 0, 4).Draw(t, label)
}

func drawID(t *rapid.T, label string) (id [16]byte) {
	copy(id[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, label))
	return id
}

func drawPartition(t *rapid.T) Partition {
	return Partition{
		TopicPartition: TopicPartition{Topic: drawString(t, "topic"), Partition: rapid.Int32().Draw(t, "partition")},
		Replicas:       drawInt32s(t, "replicas"), ISR: drawInt32s(t, "isr"),
		Leader: rapid.Int32().Draw(t, "leader"), LeaderEpoch: rapid.Int32().Draw(t, "leaderEpoch"),
		PartitionEpoch: rapid.Int32().Draw(t, "partitionEpoch"),
	}
}

func drawRecord(t *rapid.T) Record {
	var r Record
	switch rapid.IntRange(0, 7).Draw(t, "kind") {
	case 0:
		b := &BrokerRecord{ID: rapid.Int32().Draw(t, "id"), Epoch: rapid.Int64().Draw(t, "epoch"), Incarnation: drawID(t, "incarnation")}
		if rapid.Bool().Draw(t, "endpoints") {
			b.Endpoints = []Endpoint{}
			for range rapid.IntRange(0, 3).Draw(t, "n") {
				b.Endpoints = append(b.Endpoints, Endpoint{Listener: drawString(t, "listener"), Addr: drawString(t, "addr")})
			}
		}
		r.Broker = b
	case 1:
		r.Fence = &FenceRecord{ID: rapid.Int32().Draw(t, "id"), Fenced: rapid.Bool().Draw(t, "fenced")}
	case 2:
		tp := &Topic{Name: drawString(t, "name"), ID: drawID(t, "id")}
		if rapid.Bool().Draw(t, "partitions") {
			tp.Partitions = []Partition{}
			for range rapid.IntRange(0, 3).Draw(t, "n") {
				tp.Partitions = append(tp.Partitions, drawPartition(t))
			}
		}
		if rapid.Bool().Draw(t, "configs") {
			tp.Configs = map[string]string{}
			for range rapid.IntRange(0, 3).Draw(t, "n") {
				tp.Configs[drawString(t, "key")] = drawString(t, "value")
			}
		}
		r.Topic = tp
	case 3:
		p := drawPartition(t)
		r.Partition = &p
	case 4:
		p := drawPartition(t)
		r.NewPartition = &p
	case 5:
		r.RemoveTopic = &RemoveTopicRecord{Name: drawString(t, "name"), ID: drawID(t, "id")}
	case 6:
		r.ProducerIDs = rapid.Int64().Draw(t, "producerIds")
	case 7:
		c := &ConfigRecord{Topic: drawString(t, "topic"), Group: drawString(t, "group"), Name: drawString(t, "name")}
		if rapid.Bool().Draw(t, "set") {
			v := drawString(t, "value")
			c.Value = &v
		}
		r.Config = c
	}
	return r
}

// TestTheFastDecoderAgreesWithJSON: on whatever EncodeRecords writes, the
// fast decoder gives json.Unmarshal's records, and it takes (does not
// hand to encoding/json) everything written without escapes.
func TestTheFastDecoderAgreesWithJSON(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var rs []Record
		if rapid.IntRange(0, 9).Draw(t, "nil") > 0 {
			rs = []Record{}
			for range rapid.IntRange(0, 4).Draw(t, "records") {
				rs = append(rs, drawRecord(t))
			}
		}
		data := EncodeRecords(rs)
		decoded := agree(t, data)
		escaped := false
		for _, c := range data {
			escaped = escaped || c == '\\'
		}
		if !decoded && !escaped {
			t.Fatalf("the fast decoder declined %s", data)
		}
		got, err := DecodeRecords(data)
		want, _ := jsonDecode(data)
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("DecodeRecords(%s) = %#v, %v; json %#v", data, got, err, want)
		}
	})
}

// FuzzDecodeRecords: on any bytes, the fast decoder declines or agrees
// with encoding/json.
func FuzzDecodeRecords(f *testing.F) {
	v := "compact"
	for _, rs := range [][]Record{
		nil,
		{{Broker: &BrokerRecord{ID: 1, Endpoints: []Endpoint{{Listener: "PLAINTEXT", Addr: "broker-1:9092"}}, Epoch: 4}}},
		{{Fence: &FenceRecord{ID: 2, Fenced: true}}, {ProducerIDs: 1000}},
		{{Topic: &Topic{Name: "input", Partitions: []Partition{{TopicPartition: TopicPartition{Topic: "input"}, Replicas: []int32{0, 1, 2}, ISR: []int32{0}}}, Configs: map[string]string{"cleanup.policy": "compact"}}}},
		{{Config: &ConfigRecord{Topic: "input", Name: "cleanup.policy", Value: &v}}, {RemoveTopic: &RemoveTopicRecord{Name: "x"}}},
	} {
		f.Add(EncodeRecords(rs))
	}
	f.Add([]byte(` [ {"fence" : {"id":1,"fenced":false}} ] `))
	f.Add([]byte(`[{"Fence":{"id":1}}]`))
	f.Add([]byte(`[{"producerIds":1e3}]`))
	f.Fuzz(func(t *testing.T, data []byte) { agree(t, data) })
}
