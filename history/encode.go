package history

import (
	"encoding/json"
	"strconv"
)

// appendOp appends op as one line of a history file: exactly the bytes
// encoding/json writes for it (Op.MarshalJSON, the format's reference), in
// the order and with the omissions the struct tags give, without
// reflection. A differential test holds the two to the same bytes.
func appendOp(b []byte, op *Op) []byte {
	b = append(b, `{"id":`...)
	b = strconv.AppendInt(b, int64(op.ID), 10)
	b = appendStringField(b, `,"process":`, op.Process)
	if op.Node != "" {
		b = appendStringField(b, `,"node":`, op.Node)
	}
	b = appendStringField(b, `,"kind":`, string(op.Kind))
	b = appendIntField(b, `,"call":`, op.Call)
	if op.Return != Never {
		b = appendIntField(b, `,"return":`, op.Return)
	}
	b = appendStringField(b, `,"outcome":`, string(op.Outcome))
	if op.Error != "" {
		b = appendStringField(b, `,"error":`, op.Error)
	}
	if p := op.Send; p != nil {
		b = append(b, `,"send":{"tp":`...)
		b = appendTP(b, p.TP)
		b = append(b, `,"messages":`...)
		b = appendMessages(b, p.Messages)
		b = appendIntField(b, `,"offset":`, p.Offset)
		if p.Txn != 0 {
			b = appendIntField(b, `,"txn":`, int64(p.Txn))
		}
		b = append(b, '}')
	}
	if p := op.Poll; p != nil {
		b = append(b, `,"poll":{`...)
		if p.Group != "" {
			b = appendStringField(b, `"group":`, p.Group)
			b = append(b, ',')
		}
		b = appendStringField(b, `"isolation":`, string(p.Isolation))
		if p.Rebalanced {
			b = append(b, `,"rebalanced":true`...)
		}
		b = append(b, `,"fetched":`...)
		if p.Fetched == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '[')
			for i := range p.Fetched {
				if i > 0 {
					b = append(b, ',')
				}
				f := &p.Fetched[i]
				b = append(b, `{"tp":`...)
				b = appendTP(b, f.TP)
				b = appendIntField(b, `,"from":`, f.From)
				b = append(b, `,"records":`...)
				b = appendRecords(b, f.Records)
				if f.LastStable != nil {
					b = appendIntField(b, `,"last_stable":`, *f.LastStable)
				}
				b = append(b, '}')
			}
			b = append(b, ']')
		}
		b = append(b, '}')
	}
	if p := op.Assign; p != nil {
		b = append(b, `,"assign":{"partitions":`...)
		b = appendTPs(b, p.Partitions)
		b = append(b, '}')
	}
	if p := op.Subscribe; p != nil {
		b = appendStringField(b, `,"subscribe":{"group":`, p.Group)
		b = append(b, `,"topics":`...)
		b = appendStrings(b, p.Topics)
		b = append(b, '}')
	}
	if p := op.Rebalance; p != nil {
		b = appendStringField(b, `,"rebalance":{"group":`, p.Group)
		b = append(b, `,"assigned":`...)
		b = appendTPs(b, p.Assigned)
		b = append(b, '}')
	}
	if p := op.Seek; p != nil {
		b = append(b, `,"seek":{"offsets":`...)
		b = appendOffsets(b, p.Offsets)
		b = append(b, '}')
	}
	if p := op.Commit; p != nil {
		b = appendStringField(b, `,"commit":{"group":`, p.Group)
		b = append(b, `,"offsets":`...)
		b = appendOffsets(b, p.Offsets)
		b = append(b, '}')
	}
	if p := op.OffsetFetch; p != nil {
		b = appendStringField(b, `,"offset_fetch":{"group":`, p.Group)
		b = append(b, `,"offsets":`...)
		b = appendOffsets(b, p.Offsets)
		if p.Final {
			b = append(b, `,"final":true`...)
		}
		b = append(b, '}')
	}
	if p := op.Txn; p != nil {
		b = appendStringField(b, `,"txn":{"transactional_id":`, p.TransactionalID)
		if p.Group != "" {
			b = appendStringField(b, `,"group":`, p.Group)
		}
		if len(p.Offsets) > 0 {
			b = append(b, `,"offsets":`...)
			b = appendOffsets(b, p.Offsets)
		}
		if p.EndCall != 0 {
			b = appendIntField(b, `,"end_call":`, p.EndCall)
		}
		b = append(b, '}')
	}
	if p := op.SinkWrite; p != nil {
		b = appendStringField(b, `,"sink_write":{"sink":`, p.Sink)
		b = append(b, `,"outputs":`...)
		b = appendMessages(b, p.Outputs)
		if len(p.Offsets) > 0 {
			b = append(b, `,"offsets":`...)
			b = appendOffsets(b, p.Offsets)
		}
		b = append(b, '}')
	}
	if p := op.FinalRead; p != nil {
		b = append(b, `,"final_read":{`...)
		if p.Sink != "" {
			b = appendStringField(b, `"sink":`, p.Sink)
			b = append(b, ',')
		}
		b = append(b, `"tp":`...)
		b = appendTP(b, p.TP)
		if p.Isolation != "" {
			b = appendStringField(b, `,"isolation":`, string(p.Isolation))
		}
		b = appendIntField(b, `,"from":`, p.From)
		if p.Output {
			b = append(b, `,"output":true`...)
		}
		if len(p.Records) > 0 {
			b = append(b, `,"records":`...)
			b = appendRecords(b, p.Records)
		}
		if len(p.Items) > 0 {
			b = append(b, `,"items":`...)
			b = appendMessages(b, p.Items)
		}
		if len(p.Offsets) > 0 {
			b = append(b, `,"offsets":`...)
			b = appendOffsets(b, p.Offsets)
		}
		b = append(b, '}')
	}
	if p := op.Nemesis; p != nil {
		b = appendStringField(b, `,"nemesis":{"description":`, p.Description)
		if len(p.Nodes) > 0 {
			b = append(b, `,"nodes":`...)
			b = appendStrings(b, p.Nodes)
		}
		b = append(b, '}')
	}
	if p := op.Replica; p != nil {
		b = append(b, `,"replica":{"tp":`...)
		b = appendTP(b, p.TP)
		b = appendStringField(b, `,"broker":`, p.Broker)
		if p.Leader {
			b = append(b, `,"leader":true`...)
		}
		if p.InISR {
			b = append(b, `,"in_isr":true`...)
		}
		if p.Online {
			b = append(b, `,"online":true`...)
		}
		b = appendIntField(b, `,"high_watermark":`, p.HighWatermark)
		b = append(b, `,"batches":`...)
		if p.Batches == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '[')
			for i := range p.Batches {
				if i > 0 {
					b = append(b, ',')
				}
				r := &p.Batches[i]
				b = appendIntField(b, `{"base":`, r.Base)
				b = appendIntField(b, `,"last":`, r.Last)
				b = appendIntField(b, `,"epoch":`, int64(r.Epoch))
				b = appendIntField(b, `,"crc":`, int64(r.CRC))
				b = appendIntField(b, `,"producer":`, r.Producer)
				b = appendIntField(b, `,"producer_epoch":`, int64(r.ProducerEpoch))
				b = appendIntField(b, `,"sequence":`, int64(r.Sequence))
				if r.Control {
					b = append(b, `,"control":true`...)
				}
				b = append(b, '}')
			}
			b = append(b, ']')
		}
		if len(p.Epochs) > 0 {
			b = append(b, `,"epochs":[`...)
			for i, e := range p.Epochs {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendIntField(b, `{"epoch":`, int64(e.Epoch))
				b = appendIntField(b, `,"start":`, e.Start)
				b = append(b, '}')
			}
			b = append(b, ']')
		}
		if p.Stopped != "" {
			b = appendStringField(b, `,"stopped":`, p.Stopped)
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

func appendIntField(b []byte, name string, v int64) []byte {
	return strconv.AppendInt(append(b, name...), v, 10)
}

func appendStringField(b []byte, name, s string) []byte {
	return appendString(append(b, name...), s)
}

func appendTP(b []byte, tp TopicPartition) []byte {
	b = appendStringField(b, `{"topic":`, tp.Topic)
	b = appendIntField(b, `,"partition":`, int64(tp.Partition))
	return append(b, '}')
}

func appendTPs(b []byte, tps []TopicPartition) []byte {
	if tps == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, tp := range tps {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendTP(b, tp)
	}
	return append(b, ']')
}

func appendOffsets(b []byte, pos []PartitionOffset) []byte {
	if pos == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, po := range pos {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"tp":`...)
		b = appendTP(b, po.TP)
		b = appendIntField(b, `,"offset":`, po.Offset)
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendStrings(b []byte, ss []string) []byte {
	if ss == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

// appendMessage appends m's fields, without braces: a Record writes its
// offset first and its Message's fields after, as encoding/json flattens
// an embedded struct.
func appendMessage(b []byte, m *Message) []byte {
	if m.Key != "" {
		b = appendStringField(b, `"key":`, m.Key)
		b = append(b, ',')
	}
	b = appendStringField(b, `"value":`, m.Value)
	if m.Source != "" {
		b = appendStringField(b, `,"source":`, m.Source)
	}
	return b
}

func appendMessages(b []byte, ms []Message) []byte {
	if ms == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range ms {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, '{')
		b = appendMessage(b, &ms[i])
		b = append(b, '}')
	}
	return append(b, ']')
}

func appendRecords(b []byte, rs []Record) []byte {
	if rs == nil {
		return append(b, "null"...)
	}
	b = append(b, '[')
	for i := range rs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendIntField(b, `{"offset":`, rs[i].Offset)
		b = append(b, ',')
		b = appendMessage(b, &rs[i].Message)
		b = append(b, '}')
	}
	return append(b, ']')
}

// appendString appends s as a JSON string. Printable ASCII without a
// quote, a backslash or the characters encoding/json escapes for HTML
// (<, >, &) is written as it is; anything else — control characters,
// non-ASCII, invalid UTF-8 — goes through encoding/json, so the bytes are
// its bytes.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}
