package history

import (
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"unicode/utf8"
	"unsafe"
)

// decoder reads one line of a history file into an Op without
// reflection. It reads what encoding/json reads into an Op
// (Op.UnmarshalJSON, the format's reference) and is stricter in three
// ways a differential fuzz test allows for: field names must be spelt as
// the tags spell them (encoding/json also takes other cases), a field may
// not come twice, and a line must be an object, not null. Whatever it
// accepts, encoding/json reads the same way.
//
// Short strings that recur across operations — process, node and topic
// names, kinds, outcomes, groups — are interned for the history, so a
// million operations share a handful of them instead of holding a copy
// each.
type decoder struct {
	b    []byte
	i    int
	strs map[string]string // the interned strings
	// recent holds interned strings by a cheap key of their bytes (recentKey),
	// the last seen at each: the few that recur are found without hashing.
	recent [64]string
}

// recentKey is where raw's interned string would be in decoder.recent.
func recentKey(raw []byte) int {
	if len(raw) == 0 {
		return 0
	}
	return (len(raw)*31 + int(raw[0])*7 + int(raw[len(raw)-1])) & 63
}

// errSyntax is wrapped with where the decoder stopped.
var errSyntax = errors.New("invalid JSON")

func (d *decoder) fail(what string) error {
	if d.i >= len(d.b) {
		return fmt.Errorf("%w: %s at the end of the line", errSyntax, what)
	}
	return fmt.Errorf("%w: %s at column %d", errSyntax, what, d.i+1)
}

func (d *decoder) ws() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// peek skips whitespace and returns the next byte, 0 at the end.
func (d *decoder) peek() byte {
	d.ws()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func (d *decoder) expect(c byte) error {
	if d.peek() != c {
		return d.fail(fmt.Sprintf("%q expected", c))
	}
	d.i++
	return nil
}

// null consumes a null if one comes next.
func (d *decoder) null() bool {
	if d.peek() == 'n' && len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "null" {
		d.i += 4
		return true
	}
	return false
}

// fields reads an object, calling field for each name; field reads the
// value. A name may come once; null for an object leaves it as it is.
func (d *decoder) fields(what string, field func(name string) error) error {
	if d.null() {
		return nil
	}
	if err := d.expect('{'); err != nil {
		return err
	}
	if d.peek() == '}' {
		d.i++
		return nil
	}
	var seen [24]string // no object of the format has more names (an op: 8 fields and 13 payloads)
	n := 0
	for {
		name, err := d.name()
		if err != nil {
			return err
		}
		for _, s := range seen[:n] {
			if s == name {
				return fmt.Errorf("%s: field %q given twice", what, name)
			}
		}
		if n == len(seen) {
			return fmt.Errorf("%s: more fields than it has", what)
		}
		seen[n] = name
		n++
		if err := d.expect(':'); err != nil {
			return err
		}
		if err := field(name); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			return nil
		default:
			return d.fail(`"," or "}" expected`)
		}
	}
}

// name reads a field name. The names of the format are plain ASCII; one
// that is not cannot be a field's, but is read to be named in the error.
func (d *decoder) name() (string, error) {
	if d.peek() != '"' {
		return "", d.fail("field name expected")
	}
	start := d.i + 1
	for j := start; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '"':
			d.i = j + 1
			// A name is matched and compared while its object is read,
			// and copied into an error; never kept, so it may be a view
			// of the line (which Read reuses only for the next line).
			return unsafe.String(&d.b[start], j-start), nil
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			return d.slowString()
		}
	}
	return "", d.fail("unterminated string")
}

// elements reads an array, calling element for each; null is a nil slice,
// [] an empty one (as encoding/json reads them), told apart by empty.
func (d *decoder) elements(empty func(), element func() error) error {
	if d.null() {
		return nil
	}
	if err := d.expect('['); err != nil {
		return err
	}
	empty()
	if d.peek() == ']' {
		d.i++
		return nil
	}
	for {
		if err := element(); err != nil {
			return err
		}
		switch d.peek() {
		case ',':
			d.i++
		case ']':
			d.i++
			return nil
		default:
			return d.fail(`"," or "]" expected`)
		}
	}
}

// str reads a string (null leaves s as it is). A string with no escape,
// control character or non-ASCII byte is taken as it is; any other goes
// through encoding/json, so escapes and invalid UTF-8 read as it reads
// them.
func (d *decoder) str(s *string) error { return d.text(s, false) }

// sharedStr is str for a string of the few that recur: it is interned.
func (d *decoder) sharedStr(s *string) error { return d.text(s, true) }

func (d *decoder) text(s *string, shared bool) error {
	if d.null() {
		return nil
	}
	if d.peek() != '"' {
		return d.fail("string expected")
	}
	start := d.i + 1
	for j := start; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '"':
			d.i = j + 1
			raw := d.b[start:j]
			if !shared {
				*s = string(raw)
				return nil
			}
			k := recentKey(raw)
			if v := d.recent[k]; v == string(raw) { // no copy for the comparison
				*s = v
				return nil
			}
			if v, ok := d.strs[string(raw)]; ok { // nor for the lookup
				d.recent[k] = v
				*s = v
				return nil
			}
			v := string(raw)
			d.recent[k] = v
			if d.strs == nil {
				d.strs = map[string]string{}
			}
			if len(d.strs) < 1<<16 { // a bound, should a file name everything differently
				d.strs[v] = v
			}
			*s = v
			return nil
		case c == '\\' || c < 0x20 || c >= utf8.RuneSelf:
			v, err := d.slowString()
			*s = v
			return err
		}
	}
	return d.fail("unterminated string")
}

// slowString reads the string at d.i with encoding/json.
func (d *decoder) slowString() (string, error) {
	start := d.i
	j := start + 1
	for ; j < len(d.b) && d.b[j] != '"'; j++ {
		if d.b[j] == '\\' {
			j++
		}
	}
	if j >= len(d.b) {
		return "", d.fail("unterminated string")
	}
	var s string
	if err := json.Unmarshal(d.b[start:j+1], &s); err != nil {
		return "", fmt.Errorf("%w: %v at column %d", errSyntax, err, start+1)
	}
	d.i = j + 1
	return s, nil
}

// integer reads a JSON number that is an integer of bits bits (null
// leaves it 0): a fraction or an exponent is refused, as encoding/json
// refuses them for an integer field.
func (d *decoder) integer(bits int) (int64, bool, error) {
	if d.null() {
		return 0, false, nil
	}
	start := d.i
	j := start
	if j < len(d.b) && d.b[j] == '-' {
		j++
	}
	digits := j
	for j < len(d.b) && d.b[j] >= '0' && d.b[j] <= '9' {
		j++
	}
	if j == digits || (d.b[digits] == '0' && j-digits > 1) {
		return 0, false, d.fail("number expected")
	}
	if j < len(d.b) && (d.b[j] == '.' || d.b[j] == 'e' || d.b[j] == 'E') {
		return 0, false, d.fail("integer expected")
	}
	if j-digits <= 18 { // cannot overflow int64: add the digits up here
		v := int64(0)
		for _, c := range d.b[digits:j] {
			v = v*10 + int64(c-'0')
		}
		if digits > start {
			v = -v
		}
		if bits == 64 || (v >= -1<<(bits-1) && v < 1<<(bits-1)) {
			d.i = j
			return v, true, nil
		}
	}
	v, err := strconv.ParseInt(string(d.b[start:j]), 10, bits) // too long, or out of range: strconv says which
	if err != nil {
		return 0, false, fmt.Errorf("%w: %s does not fit %d bits at column %d", errSyntax, d.b[start:j], bits, start+1)
	}
	d.i = j
	return v, true, nil
}

func (d *decoder) int64(v *int64) error {
	n, _, err := d.integer(64)
	*v = n
	return err
}

func (d *decoder) int32(v *int32) error {
	n, _, err := d.integer(32)
	*v = int32(n)
	return err
}

func (d *decoder) int16(v *int16) error {
	n, _, err := d.integer(16)
	*v = int16(n)
	return err
}

func (d *decoder) uint32(v *uint32) error {
	if d.peek() == '-' {
		return d.fail("unsigned integer expected")
	}
	n, _, err := d.integer(33)
	if err == nil && n > 1<<32-1 {
		return d.fail("number does not fit 32 bits")
	}
	*v = uint32(n)
	return err
}

func (d *decoder) boolean(v *bool) error {
	if d.null() {
		return nil
	}
	switch {
	case len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "true":
		*v = true
		d.i += 4
	case len(d.b)-d.i >= 5 && string(d.b[d.i:d.i+5]) == "false":
		*v = false
		d.i += 5
	default:
		return d.fail("true or false expected")
	}
	return nil
}

func unknown(what, name string) error {
	return fmt.Errorf("%s: unknown field %q", what, name)
}

// op reads a whole line.
func (d *decoder) op(op *Op) error {
	*op = Op{Return: Never}
	if d.peek() != '{' {
		return d.fail("an operation (an object) expected")
	}
	err := d.fields("op", func(name string) error {
		switch name {
		case "id":
			n, _, err := d.integer(strconv.IntSize)
			op.ID = ID(n)
			return err
		case "process":
			return d.sharedStr(&op.Process)
		case "node":
			return d.sharedStr(&op.Node)
		case "kind":
			return d.sharedStr((*string)(&op.Kind))
		case "call":
			return d.int64(&op.Call)
		case "return":
			n, ok, err := d.integer(64)
			if ok {
				op.Return = n
			}
			return err
		case "outcome":
			return d.sharedStr((*string)(&op.Outcome))
		case "error":
			return d.str(&op.Error)
		case "send":
			return payload(d, &op.Send, d.send)
		case "poll":
			return payload(d, &op.Poll, d.poll)
		case "assign":
			return payload(d, &op.Assign, func(p *Assign) error {
				return d.fields("assign", func(name string) error {
					if name == "partitions" {
						return d.tps(&p.Partitions)
					}
					return unknown("assign", name)
				})
			})
		case "subscribe":
			return payload(d, &op.Subscribe, func(p *Subscribe) error {
				return d.fields("subscribe", func(name string) error {
					switch name {
					case "group":
						return d.sharedStr(&p.Group)
					case "topics":
						return d.elements(func() { p.Topics = []string{} }, func() error {
							p.Topics = append(p.Topics, "")
							return d.sharedStr(&p.Topics[len(p.Topics)-1])
						})
					}
					return unknown("subscribe", name)
				})
			})
		case "rebalance":
			return payload(d, &op.Rebalance, func(p *Rebalance) error {
				return d.fields("rebalance", func(name string) error {
					switch name {
					case "group":
						return d.sharedStr(&p.Group)
					case "assigned":
						return d.tps(&p.Assigned)
					}
					return unknown("rebalance", name)
				})
			})
		case "seek":
			return payload(d, &op.Seek, func(p *Seek) error {
				return d.fields("seek", func(name string) error {
					if name == "offsets" {
						return d.offsets(&p.Offsets)
					}
					return unknown("seek", name)
				})
			})
		case "commit":
			return payload(d, &op.Commit, func(p *Commit) error {
				return d.fields("commit", func(name string) error {
					switch name {
					case "group":
						return d.sharedStr(&p.Group)
					case "offsets":
						return d.offsets(&p.Offsets)
					}
					return unknown("commit", name)
				})
			})
		case "offset_fetch":
			return payload(d, &op.OffsetFetch, func(p *OffsetFetch) error {
				return d.fields("offset_fetch", func(name string) error {
					switch name {
					case "group":
						return d.sharedStr(&p.Group)
					case "offsets":
						return d.offsets(&p.Offsets)
					case "final":
						return d.boolean(&p.Final)
					}
					return unknown("offset_fetch", name)
				})
			})
		case "txn":
			return payload(d, &op.Txn, func(p *Txn) error {
				return d.fields("txn", func(name string) error {
					switch name {
					case "transactional_id":
						return d.sharedStr(&p.TransactionalID)
					case "group":
						return d.sharedStr(&p.Group)
					case "offsets":
						return d.offsets(&p.Offsets)
					case "end_call":
						return d.int64(&p.EndCall)
					}
					return unknown("txn", name)
				})
			})
		case "sink_write":
			return payload(d, &op.SinkWrite, func(p *SinkWrite) error {
				return d.fields("sink_write", func(name string) error {
					switch name {
					case "sink":
						return d.sharedStr(&p.Sink)
					case "outputs":
						return d.messages(&p.Outputs)
					case "offsets":
						return d.offsets(&p.Offsets)
					}
					return unknown("sink_write", name)
				})
			})
		case "final_read":
			return payload(d, &op.FinalRead, d.finalRead)
		case "nemesis":
			return payload(d, &op.Nemesis, func(p *Nemesis) error {
				return d.fields("nemesis", func(name string) error {
					switch name {
					case "description":
						return d.str(&p.Description)
					case "nodes":
						return d.elements(func() { p.Nodes = []string{} }, func() error {
							p.Nodes = append(p.Nodes, "")
							return d.sharedStr(&p.Nodes[len(p.Nodes)-1])
						})
					}
					return unknown("nemesis", name)
				})
			})
		case "replica":
			return payload(d, &op.Replica, d.replica)
		}
		return unknown("op", name)
	})
	if err != nil {
		return err
	}
	if d.ws(); d.i != len(d.b) {
		return d.fail("end of line expected")
	}
	return nil
}

// payload reads an operation's payload into a new *T (null leaves it nil).
func payload[T any](d *decoder, p **T, read func(*T) error) error {
	if d.null() {
		return nil
	}
	*p = new(T)
	return read(*p)
}

func (d *decoder) tp(tp *TopicPartition) error {
	return d.fields("tp", func(name string) error {
		switch name {
		case "topic":
			return d.sharedStr(&tp.Topic)
		case "partition":
			return d.int32(&tp.Partition)
		}
		return unknown("tp", name)
	})
}

func (d *decoder) tps(tps *[]TopicPartition) error {
	return d.elements(func() { *tps = []TopicPartition{} }, func() error {
		*tps = append(*tps, TopicPartition{})
		return d.tp(&(*tps)[len(*tps)-1])
	})
}

func (d *decoder) offsets(pos *[]PartitionOffset) error {
	return d.elements(func() { *pos = []PartitionOffset{} }, func() error {
		*pos = append(*pos, PartitionOffset{})
		po := &(*pos)[len(*pos)-1]
		return d.fields("offset", func(name string) error {
			switch name {
			case "tp":
				return d.tp(&po.TP)
			case "offset":
				return d.int64(&po.Offset)
			}
			return unknown("offset", name)
		})
	})
}

// messageField reads one of a message's fields; ok is false for a name
// that is not one.
func (d *decoder) messageField(m *Message, name string) (bool, error) {
	switch name {
	case "key":
		return true, d.str(&m.Key)
	case "value":
		return true, d.str(&m.Value)
	case "source":
		return true, d.str(&m.Source)
	}
	return false, nil
}

func (d *decoder) messages(ms *[]Message) error {
	return d.elements(func() { *ms = []Message{} }, func() error {
		*ms = append(*ms, Message{})
		m := &(*ms)[len(*ms)-1]
		return d.fields("message", func(name string) error {
			if ok, err := d.messageField(m, name); ok {
				return err
			}
			return unknown("message", name)
		})
	})
}

func (d *decoder) records(rs *[]Record) error {
	return d.elements(func() { *rs = []Record{} }, func() error {
		*rs = append(*rs, Record{})
		r := &(*rs)[len(*rs)-1]
		return d.fields("record", func(name string) error {
			if name == "offset" {
				return d.int64(&r.Offset)
			}
			if ok, err := d.messageField(&r.Message, name); ok {
				return err
			}
			return unknown("record", name)
		})
	})
}

func (d *decoder) send(p *Send) error {
	return d.fields("send", func(name string) error {
		switch name {
		case "tp":
			return d.tp(&p.TP)
		case "messages":
			return d.messages(&p.Messages)
		case "offset":
			return d.int64(&p.Offset)
		case "txn":
			n, _, err := d.integer(strconv.IntSize)
			p.Txn = ID(n)
			return err
		}
		return unknown("send", name)
	})
}

func (d *decoder) poll(p *Poll) error {
	return d.fields("poll", func(name string) error {
		switch name {
		case "group":
			return d.sharedStr(&p.Group)
		case "isolation":
			return d.sharedStr((*string)(&p.Isolation))
		case "rebalanced":
			return d.boolean(&p.Rebalanced)
		case "fetched":
			return d.elements(func() { p.Fetched = []Fetch{} }, func() error {
				p.Fetched = append(p.Fetched, Fetch{})
				f := &p.Fetched[len(p.Fetched)-1]
				return d.fields("fetch", func(name string) error {
					switch name {
					case "tp":
						return d.tp(&f.TP)
					case "from":
						return d.int64(&f.From)
					case "records":
						return d.records(&f.Records)
					case "last_stable":
						n, ok, err := d.integer(64)
						if ok {
							f.LastStable = &n
						}
						return err
					}
					return unknown("fetch", name)
				})
			})
		}
		return unknown("poll", name)
	})
}

func (d *decoder) finalRead(p *FinalRead) error {
	return d.fields("final_read", func(name string) error {
		switch name {
		case "sink":
			return d.sharedStr(&p.Sink)
		case "tp":
			return d.tp(&p.TP)
		case "isolation":
			return d.sharedStr((*string)(&p.Isolation))
		case "from":
			return d.int64(&p.From)
		case "output":
			return d.boolean(&p.Output)
		case "records":
			return d.records(&p.Records)
		case "items":
			return d.messages(&p.Items)
		case "offsets":
			return d.offsets(&p.Offsets)
		}
		return unknown("final_read", name)
	})
}

func (d *decoder) replica(p *Replica) error {
	return d.fields("replica", func(name string) error {
		switch name {
		case "tp":
			return d.tp(&p.TP)
		case "broker":
			return d.sharedStr(&p.Broker)
		case "leader":
			return d.boolean(&p.Leader)
		case "in_isr":
			return d.boolean(&p.InISR)
		case "online":
			return d.boolean(&p.Online)
		case "high_watermark":
			return d.int64(&p.HighWatermark)
		case "batches":
			return d.elements(func() { p.Batches = []ReplicaBatch{} }, func() error {
				p.Batches = append(p.Batches, ReplicaBatch{})
				r := &p.Batches[len(p.Batches)-1]
				return d.fields("batch", func(name string) error {
					switch name {
					case "base":
						return d.int64(&r.Base)
					case "last":
						return d.int64(&r.Last)
					case "epoch":
						return d.int32(&r.Epoch)
					case "crc":
						return d.uint32(&r.CRC)
					case "producer":
						return d.int64(&r.Producer)
					case "producer_epoch":
						return d.int16(&r.ProducerEpoch)
					case "sequence":
						return d.int32(&r.Sequence)
					case "control":
						return d.boolean(&r.Control)
					}
					return unknown("batch", name)
				})
			})
		case "epochs":
			return d.elements(func() { p.Epochs = []ReplicaEpoch{} }, func() error {
				p.Epochs = append(p.Epochs, ReplicaEpoch{})
				e := &p.Epochs[len(p.Epochs)-1]
				return d.fields("epoch", func(name string) error {
					switch name {
					case "epoch":
						return d.int32(&e.Epoch)
					case "start":
						return d.int64(&e.Start)
					}
					return unknown("epoch", name)
				})
			})
		case "stopped":
			return d.str(&p.Stopped)
		}
		return unknown("replica", name)
	})
}
