package metadata

import (
	"slices"
	"strconv"
	"unicode/utf8"
)

// decodeRecords reads an entry's data as EncodeRecords writes it, without
// reflection: every broker and controller decodes every entry of the
// metadata log, and encoding/json's reflective decoding was an eighth of a
// catalogue run's CPU. It accepts only what json.Marshal writes for these
// types — keys spelt as their tags, each once, no escapes in strings,
// integers without exponent, [16]byte as 16 numbers — and reports ok=false
// on anything else, which DecodeRecords then hands to encoding/json, so
// the result is always json.Unmarshal's (TestTheFastDecoderAgreesWithJSON).
func decodeRecords(data []byte) (rs []Record, ok bool) {
	d := decoder{b: data}
	if d.null() {
		rs = nil
	} else {
		rs = []Record{}
		d.array(func() { rs = append(rs, d.record()) })
	}
	d.ws()
	if d.bad || d.i != len(d.b) {
		return nil, false
	}
	return rs, true
}

type decoder struct {
	b   []byte
	i   int
	bad bool
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

// peek is the next byte past white space, 0 at the end.
func (d *decoder) peek() byte {
	d.ws()
	if d.i < len(d.b) {
		return d.b[d.i]
	}
	return 0
}

func (d *decoder) expect(c byte) {
	if d.peek() != c {
		d.bad = true
		return
	}
	d.i++
}

// null consumes a null, if that is what comes next.
func (d *decoder) null() bool {
	if d.bad || d.peek() != 'n' {
		return false
	}
	if len(d.b)-d.i < 4 || string(d.b[d.i:d.i+4]) != "null" {
		d.bad = true
		return false
	}
	d.i += 4
	return true
}

// array calls elem for each element of an array.
func (d *decoder) array(elem func()) {
	d.expect('[')
	if d.peek() == ']' {
		d.i++
		return
	}
	for !d.bad {
		elem()
		switch d.peek() {
		case ',':
			d.i++
		case ']':
			d.i++
			return
		default:
			d.bad = true
		}
	}
}

// members calls member for each key of an object, past its colon.
func (d *decoder) members(member func(name string)) {
	d.expect('{')
	if d.peek() == '}' {
		d.i++
		return
	}
	for !d.bad {
		name := d.rawString()
		d.expect(':')
		member(name)
		switch d.peek() {
		case ',':
			d.i++
		case '}':
			d.i++
			return
		default:
			d.bad = true
		}
	}
}

// object calls field for each key of an object, each of which must be
// one of keys and appear once.
func (d *decoder) object(keys []string, field func(k int)) {
	var seen uint32
	d.members(func(name string) {
		k := slices.Index(keys, name)
		if k < 0 || seen&(1<<k) != 0 {
			d.bad = true // unknown (or differently spelt) or repeated: json's rules
			return
		}
		seen |= 1 << k
		field(k)
	})
}

// rawString is a string with no escapes, valid UTF-8, no control bytes.
func (d *decoder) rawString() string {
	d.expect('"')
	if d.bad {
		return ""
	}
	start := d.i
	for d.i < len(d.b) {
		c := d.b[d.i]
		switch {
		case c == '"':
			s := d.b[start:d.i]
			d.i++
			if !utf8.Valid(s) {
				d.bad = true
			}
			return string(s)
		case c == '\\' || c < 0x20:
			d.bad = true
			return ""
		}
		d.i++
	}
	d.bad = true
	return ""
}

// integer is a JSON integer within bits.
func (d *decoder) integer(bits int) int64 {
	d.ws()
	start := d.i
	if d.i < len(d.b) && d.b[d.i] == '-' {
		d.i++
	}
	digits := d.i
	for d.i < len(d.b) && d.b[d.i] >= '0' && d.b[d.i] <= '9' {
		d.i++
	}
	if d.i == digits || (d.b[digits] == '0' && d.i-digits > 1) {
		d.bad = true
		return 0
	}
	if d.i < len(d.b) {
		if c := d.b[d.i]; c == '.' || c == 'e' || c == 'E' {
			d.bad = true // json.Unmarshal refuses these for integers; let it say so
			return 0
		}
	}
	v, err := strconv.ParseInt(string(d.b[start:d.i]), 10, bits)
	if err != nil {
		d.bad = true
	}
	return v
}

func (d *decoder) int32() int32 { return int32(d.integer(32)) }

func (d *decoder) boolean() bool {
	d.ws()
	switch {
	case len(d.b)-d.i >= 4 && string(d.b[d.i:d.i+4]) == "true":
		d.i += 4
		return true
	case len(d.b)-d.i >= 5 && string(d.b[d.i:d.i+5]) == "false":
		d.i += 5
		return false
	}
	d.bad = true
	return false
}

// id is a [16]byte, which json writes as 16 numbers.
func (d *decoder) id() (id [16]byte) {
	n := 0
	d.array(func() {
		v := d.integer(16)
		if n >= len(id) || v < 0 || v > 255 {
			d.bad = true
			return
		}
		id[n] = byte(v)
		n++
	})
	if n != len(id) {
		d.bad = true
	}
	return id
}

func (d *decoder) int32s() []int32 {
	if d.null() {
		return nil
	}
	out := []int32{}
	d.array(func() { out = append(out, d.int32()) })
	return out
}

var (
	recordKeys    = []string{"broker", "fence", "topic", "partition", "newPartition", "removeTopic", "producerIds", "config"}
	brokerKeys    = []string{"id", "endpoints", "epoch", "incarnation"}
	endpointKeys  = []string{"listener", "addr"}
	fenceKeys     = []string{"id", "fenced"}
	topicKeys     = []string{"name", "id", "partitions", "configs"}
	partitionKeys = []string{"topic", "partition", "replicas", "isr", "leader", "leaderEpoch", "partitionEpoch"}
	removeKeys    = []string{"name", "id"}
	configKeys    = []string{"topic", "group", "name", "value"}
)

func (d *decoder) record() (r Record) {
	d.object(recordKeys, func(k int) {
		if k != 6 && d.null() {
			return // json leaves the pointer nil
		}
		switch k {
		case 0:
			r.Broker = d.broker()
		case 1:
			r.Fence = d.fence()
		case 2:
			r.Topic = d.topic()
		case 3:
			p := d.partition()
			r.Partition = &p
		case 4:
			p := d.partition()
			r.NewPartition = &p
		case 5:
			r.RemoveTopic = d.removeTopic()
		case 6:
			r.ProducerIDs = d.integer(64)
		case 7:
			r.Config = d.config()
		}
	})
	return r
}

func (d *decoder) broker() *BrokerRecord {
	b := &BrokerRecord{}
	d.object(brokerKeys, func(k int) {
		switch k {
		case 0:
			b.ID = d.int32()
		case 1:
			if d.null() {
				return
			}
			b.Endpoints = []Endpoint{}
			d.array(func() {
				var e Endpoint
				d.object(endpointKeys, func(k int) {
					if k == 0 {
						e.Listener = d.rawString()
					} else {
						e.Addr = d.rawString()
					}
				})
				b.Endpoints = append(b.Endpoints, e)
			})
		case 2:
			b.Epoch = d.integer(64)
		case 3:
			b.Incarnation = d.id()
		}
	})
	return b
}

func (d *decoder) fence() *FenceRecord {
	f := &FenceRecord{}
	d.object(fenceKeys, func(k int) {
		if k == 0 {
			f.ID = d.int32()
		} else {
			f.Fenced = d.boolean()
		}
	})
	return f
}

func (d *decoder) topic() *Topic {
	t := &Topic{}
	d.object(topicKeys, func(k int) {
		switch k {
		case 0:
			t.Name = d.rawString()
		case 1:
			t.ID = d.id()
		case 2:
			if d.null() {
				return
			}
			t.Partitions = []Partition{}
			d.array(func() { t.Partitions = append(t.Partitions, d.partition()) })
		case 3:
			if d.null() {
				return
			}
			t.Configs = map[string]string{}
			d.members(func(name string) {
				if _, dup := t.Configs[name]; dup {
					d.bad = true
					return
				}
				t.Configs[name] = d.rawString()
			})
		}
	})
	return t
}

func (d *decoder) partition() (p Partition) {
	d.object(partitionKeys, func(k int) {
		switch k {
		case 0:
			p.Topic = d.rawString()
		case 1:
			p.Partition = d.int32()
		case 2:
			p.Replicas = d.int32s()
		case 3:
			p.ISR = d.int32s()
		case 4:
			p.Leader = d.int32()
		case 5:
			p.LeaderEpoch = d.int32()
		case 6:
			p.PartitionEpoch = d.int32()
		}
	})
	return p
}

func (d *decoder) removeTopic() *RemoveTopicRecord {
	r := &RemoveTopicRecord{}
	d.object(removeKeys, func(k int) {
		if k == 0 {
			r.Name = d.rawString()
		} else {
			r.ID = d.id()
		}
	})
	return r
}

func (d *decoder) config() *ConfigRecord {
	c := &ConfigRecord{}
	d.object(configKeys, func(k int) {
		switch k {
		case 0:
			c.Topic = d.rawString()
		case 1:
			c.Group = d.rawString()
		case 2:
			c.Name = d.rawString()
		case 3:
			if !d.null() {
				v := d.rawString()
				c.Value = &v
			}
		}
	})
	return c
}
