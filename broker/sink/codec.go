package sink

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
)

// The wire format. Every frame is one whole env frame, so it carries no
// length of its own:
//
//	request  = magic id:uvarint op:u8 body
//	response = magic id:uvarint op:u8 status:u8 body
//
//	write    = n:uvarint put*n m:uvarint condition*m
//	put      = key:str flags:u8 [value:bytes unless flags&delete]
//	condition= key:str kind:u8 (version:uvarint | value:bytes)
//	get      = n:uvarint key:str*n
//	scan     = prefix:str after:str limit:uvarint
//
//	ok write = revision:uvarint
//	ok get   = revision:uvarint n:uvarint (version:uvarint [value:bytes if version>0])*n
//	ok scan  = revision:uvarint more:u8 n:uvarint (key:str version:uvarint value:bytes)*n
//	condition failed = index:uvarint version:uvarint
//	any other status = message:str
//
// str and bytes are a uvarint length and that many bytes. A decoder checks
// every length and count against the bytes that remain before it allocates,
// rejects unknown ops, kinds, flags and trailing bytes, and never panics.

const magic byte = 0x5b // protocol version 1

type op uint8

const (
	opWrite op = 1
	opGet   op = 2
	opScan  op = 3
)

func (o op) String() string {
	switch o {
	case opWrite:
		return "write"
	case opGet:
		return "get"
	case opScan:
		return "scan"
	}
	return fmt.Sprintf("op-%d", uint8(o))
}

type status uint8

const (
	statusOK              status = 0
	statusConditionFailed status = 1
	statusInvalid         status = 2
	statusStorage         status = 3
	statusUnavailable     status = 4
)

const putDelete byte = 1 // the only put flag

// messageBytesMax bounds the text of an error status.
const messageBytesMax = 1024

// request is a decoded request.
type request struct {
	id    uint64
	op    op
	puts  []Put
	conds []Condition
	keys  []string
	scan  ScanRange
}

// response is a decoded response.
type response struct {
	id       uint64
	op       op
	status   status
	revision uint64
	entries  []Entry // get: one per key asked, without Key; scan: present entries
	more     bool
	index    int    // condition failed: which condition
	version  uint64 // condition failed: the key's version
	message  string // other statuses
}

// --- encoding ---

func appendUvarint(b []byte, v uint64) []byte { return binary.AppendUvarint(b, v) }

func appendBytes(b, p []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(p)))
	return append(b, p...)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendPuts(b []byte, puts []Put) []byte {
	b = appendUvarint(b, uint64(len(puts)))
	for _, p := range puts {
		b = appendString(b, p.Key)
		if p.Delete {
			b = append(b, putDelete)
			continue
		}
		b = append(b, 0)
		b = appendBytes(b, p.Value)
	}
	return b
}

func encodeRequest(r *request) []byte {
	b := []byte{magic}
	b = appendUvarint(b, r.id)
	b = append(b, byte(r.op))
	switch r.op {
	case opWrite:
		b = appendPuts(b, r.puts)
		b = appendUvarint(b, uint64(len(r.conds)))
		for _, c := range r.conds {
			b = appendString(b, c.Key)
			b = append(b, byte(c.Kind))
			if c.Kind == VersionIs {
				b = appendUvarint(b, c.Version)
			} else {
				b = appendBytes(b, c.Value)
			}
		}
	case opGet:
		b = appendUvarint(b, uint64(len(r.keys)))
		for _, k := range r.keys {
			b = appendString(b, k)
		}
	case opScan:
		b = appendString(b, r.scan.Prefix)
		b = appendString(b, r.scan.After)
		b = appendUvarint(b, uint64(r.scan.Limit))
	default:
		panic(fmt.Sprintf("sink: encoding a request with unknown op %d", r.op))
	}
	return b
}

func encodeResponse(r *response) []byte {
	b := []byte{magic}
	b = appendUvarint(b, r.id)
	b = append(b, byte(r.op), byte(r.status))
	switch r.status {
	case statusOK:
		b = appendUvarint(b, r.revision)
		switch r.op {
		case opWrite:
		case opGet:
			b = appendUvarint(b, uint64(len(r.entries)))
			for _, e := range r.entries {
				b = appendUvarint(b, e.Version)
				if e.Version != 0 {
					b = appendBytes(b, e.Value)
				}
			}
		case opScan:
			more := byte(0)
			if r.more {
				more = 1
			}
			b = append(b, more)
			b = appendUvarint(b, uint64(len(r.entries)))
			for _, e := range r.entries {
				b = appendString(b, e.Key)
				b = appendUvarint(b, e.Version)
				b = appendBytes(b, e.Value)
			}
		default:
			panic(fmt.Sprintf("sink: encoding a response with unknown op %d", r.op))
		}
	case statusConditionFailed:
		b = appendUvarint(b, uint64(r.index))
		b = appendUvarint(b, r.version)
	default:
		msg := r.message
		if len(msg) > messageBytesMax {
			msg = msg[:messageBytesMax]
		}
		b = appendString(b, msg)
	}
	return b
}

// --- decoding ---

// decoder reads a frame; the first error sticks and every later read
// returns zero values, so a caller checks err once at the end.
type decoder struct {
	b   []byte
	off int
	err error
}

func (d *decoder) fail(format string, args ...any) {
	if d.err == nil {
		d.err = fmt.Errorf("at byte %d: %s", d.off, fmt.Sprintf(format, args...))
	}
}

func (d *decoder) rest() int { return len(d.b) - d.off }

func (d *decoder) u8(what string) byte {
	if d.err != nil {
		return 0
	}
	if d.rest() < 1 {
		d.fail("frame ends before %s", what)
		return 0
	}
	v := d.b[d.off]
	d.off++
	return v
}

func (d *decoder) uvarint(what string) uint64 {
	if d.err != nil {
		return 0
	}
	v, n := binary.Uvarint(d.b[d.off:])
	if n <= 0 {
		d.fail("bad varint for %s", what)
		return 0
	}
	d.off += n
	return v
}

// bytes reads a length-prefixed byte string of at most max bytes; the
// result aliases the frame.
func (d *decoder) bytes(what string, max int) []byte {
	n := d.uvarint(what + " length")
	if d.err != nil {
		return nil
	}
	if n > uint64(max) {
		d.fail("%s of %d bytes exceeds %d", what, n, max)
		return nil
	}
	if n > uint64(d.rest()) {
		d.fail("%s of %d bytes overruns the frame (%d left)", what, n, d.rest())
		return nil
	}
	p := d.b[d.off : d.off+int(n) : d.off+int(n)]
	d.off += int(n)
	return p
}

func (d *decoder) str(what string, max int) string { return string(d.bytes(what, max)) }

// count reads an element count, bounded by max and by the bytes left
// (every element takes at least minBytes), so a hostile count cannot make
// the caller allocate.
func (d *decoder) count(what string, max, minBytes int) int {
	n := d.uvarint(what)
	if d.err != nil {
		return 0
	}
	if n > uint64(max) {
		d.fail("%d %s exceeds %d", n, what, max)
		return 0
	}
	if n*uint64(minBytes) > uint64(d.rest()) {
		d.fail("%d %s cannot fit in the %d bytes left", n, what, d.rest())
		return 0
	}
	return int(n)
}

func (d *decoder) end() error {
	if d.err == nil && d.rest() != 0 {
		d.fail("%d trailing bytes", d.rest())
	}
	return d.err
}

func (d *decoder) header() (id uint64, o op) {
	if m := d.u8("magic"); d.err == nil && m != magic {
		d.fail("magic %#x, want %#x", m, magic)
	}
	id = d.uvarint("request id")
	o = op(d.u8("op"))
	if d.err == nil && (o < opWrite || o > opScan) {
		d.fail("unknown op %d", o)
	}
	return id, o
}

func (d *decoder) puts() []Put {
	n := d.count("puts", PutsMax, 2)
	puts := make([]Put, 0, n)
	for range n {
		p := Put{Key: d.str("key", KeyBytesMax)}
		switch flags := d.u8("put flags"); flags {
		case 0:
			p.Value = d.bytes("value", ValueBytesMax)
		case putDelete:
			p.Delete = true
		default:
			d.fail("unknown put flags %#x", flags)
		}
		if d.err != nil {
			return nil
		}
		puts = append(puts, p)
	}
	return puts
}

// decodeRequest parses a request frame. Structural damage is an error;
// whether the request keeps the protocol's rules is validate's business.
func decodeRequest(frame []byte) (*request, error) {
	d := &decoder{b: frame}
	r := &request{}
	r.id, r.op = d.header()
	switch r.op {
	case opWrite:
		r.puts = d.puts()
		n := d.count("conditions", ConditionsMax, 3)
		for range n {
			c := Condition{Key: d.str("condition key", KeyBytesMax), Kind: ConditionKind(d.u8("condition kind"))}
			switch c.Kind {
			case VersionIs:
				c.Version = d.uvarint("condition version")
			case ValueIs:
				c.Value = d.bytes("condition value", ValueBytesMax)
			default:
				d.fail("unknown condition kind %d", c.Kind)
			}
			if d.err != nil {
				break
			}
			r.conds = append(r.conds, c)
		}
	case opGet:
		n := d.count("keys", GetKeysMax, 1)
		r.keys = make([]string, 0, n)
		for range n {
			r.keys = append(r.keys, d.str("key", KeyBytesMax))
		}
	case opScan:
		r.scan.Prefix = d.str("scan prefix", KeyBytesMax)
		r.scan.After = d.str("scan start", KeyBytesMax)
		limit := d.uvarint("scan limit")
		if limit > ScanLimitMax {
			d.fail("scan limit %d exceeds %d", limit, ScanLimitMax)
		}
		r.scan.Limit = int(limit)
	}
	if err := d.end(); err != nil {
		return nil, err
	}
	return r, nil
}

// decodeResponse parses a response frame.
func decodeResponse(frame []byte) (*response, error) {
	d := &decoder{b: frame}
	r := &response{}
	r.id, r.op = d.header()
	r.status = status(d.u8("status"))
	switch r.status {
	case statusOK:
		r.revision = d.uvarint("revision")
		switch r.op {
		case opGet:
			n := d.count("entries", GetKeysMax, 1)
			r.entries = make([]Entry, 0, n)
			for range n {
				e := Entry{Version: d.uvarint("version")}
				if e.Version != 0 {
					e.Value = d.bytes("value", ValueBytesMax)
				}
				r.entries = append(r.entries, e)
			}
		case opScan:
			switch more := d.u8("more"); more {
			case 0, 1:
				r.more = more == 1
			default:
				d.fail("more flag %d is not 0 or 1", more)
			}
			n := d.count("entries", ScanLimitMax, 3)
			r.entries = make([]Entry, 0, n)
			for range n {
				e := Entry{Key: d.str("key", KeyBytesMax), Version: d.uvarint("version")}
				e.Value = d.bytes("value", ValueBytesMax)
				if d.err == nil && e.Version == 0 {
					d.fail("scan entry %q has version 0", e.Key)
				}
				r.entries = append(r.entries, e)
			}
		}
	case statusConditionFailed:
		if r.op != opWrite {
			d.fail("condition failure answers a %v", r.op)
		}
		idx := d.uvarint("condition index")
		if idx >= ConditionsMax {
			d.fail("condition index %d out of range", idx)
		}
		r.index = int(idx)
		r.version = d.uvarint("version")
	case statusInvalid, statusStorage, statusUnavailable:
		r.message = d.str("message", messageBytesMax)
	default:
		d.fail("unknown status %d", r.status)
	}
	if err := d.end(); err != nil {
		return nil, err
	}
	return r, nil
}

// --- rules ---

// validateWrite checks a write against the protocol's rules.
func validateWrite(puts []Put, conds []Condition) error {
	if len(puts) == 0 {
		return errors.New("a write needs at least one put")
	}
	if len(puts) > PutsMax {
		return fmt.Errorf("%d puts exceed %d", len(puts), PutsMax)
	}
	if len(conds) > ConditionsMax {
		return fmt.Errorf("%d conditions exceed %d", len(conds), ConditionsMax)
	}
	seen := make(map[string]struct{}, len(puts))
	for i, p := range puts {
		if err := validateKey(p.Key); err != nil {
			return fmt.Errorf("put %d: %w", i, err)
		}
		if _, dup := seen[p.Key]; dup {
			return fmt.Errorf("put %d: key %q put twice in one write", i, p.Key)
		}
		seen[p.Key] = struct{}{}
		if !p.Delete && len(p.Value) > ValueBytesMax {
			return fmt.Errorf("put %d: value of %d bytes exceeds %d", i, len(p.Value), ValueBytesMax)
		}
	}
	for i, c := range conds {
		if err := validateKey(c.Key); err != nil {
			return fmt.Errorf("condition %d: %w", i, err)
		}
		switch c.Kind {
		case VersionIs:
		case ValueIs:
			if len(c.Value) > ValueBytesMax {
				return fmt.Errorf("condition %d: value of %d bytes exceeds %d", i, len(c.Value), ValueBytesMax)
			}
		default:
			return fmt.Errorf("condition %d: unknown kind %d", i, c.Kind)
		}
	}
	return nil
}

func validateKeys(keys []string) error {
	if len(keys) > GetKeysMax {
		return fmt.Errorf("%d keys exceed %d", len(keys), GetKeysMax)
	}
	for i, k := range keys {
		if err := validateKey(k); err != nil {
			return fmt.Errorf("key %d: %w", i, err)
		}
	}
	return nil
}

func validateScan(r ScanRange) error {
	if r.Limit < 0 || r.Limit > ScanLimitMax {
		return fmt.Errorf("scan limit %d outside [0, %d]", r.Limit, ScanLimitMax)
	}
	if len(r.Prefix) > KeyBytesMax || len(r.After) > KeyBytesMax {
		return fmt.Errorf("scan prefix or start longer than %d bytes", KeyBytesMax)
	}
	return nil
}

func validateKey(k string) error {
	if k == "" {
		return errors.New("empty key")
	}
	if len(k) > KeyBytesMax {
		return fmt.Errorf("key of %d bytes exceeds %d", len(k), KeyBytesMax)
	}
	return nil
}

// --- disk records ---

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// recordHeaderBytes is a log record's header: payload length, then the
// CRC-32C of the length's four bytes and the payload.
const recordHeaderBytes = 8

// recordPayloadBytesMax bounds a log record's payload (a write's puts and
// revision, never more than the request that carried them plus a few
// bytes); a longer length in a header can only be damage.
const recordPayloadBytesMax = FrameBytesMax + 64

// appendRecord appends the log record of the write at revision.
func appendRecord(b []byte, revision uint64, puts []Put) []byte {
	start := len(b)
	b = append(b, make([]byte, recordHeaderBytes)...)
	b = appendUvarint(b, revision)
	b = appendPuts(b, puts)
	payload := len(b) - start - recordHeaderBytes
	binary.BigEndian.PutUint32(b[start:], uint32(payload))
	crc := crc32.Update(0, castagnoli, b[start:start+4])
	crc = crc32.Update(crc, castagnoli, b[start+recordHeaderBytes:])
	binary.BigEndian.PutUint32(b[start+4:], crc)
	return b
}

// recordFate says what readRecord found.
type recordFate uint8

const (
	recordOK      recordFate = iota
	recordTorn               // the bytes end inside the record: a write cut short
	recordCorrupt            // the record is whole but fails its checksum or does not parse
)

func (f recordFate) String() string {
	return [...]string{"ok", "torn", "corrupt"}[f]
}

// readRecord reads the log record at the start of b: its revision and
// puts (aliasing b), and its length in bytes.
func readRecord(b []byte) (revision uint64, puts []Put, n int, fate recordFate) {
	if len(b) < recordHeaderBytes {
		return 0, nil, 0, recordTorn
	}
	length := binary.BigEndian.Uint32(b)
	crc := crc32.Update(0, castagnoli, b[:4])
	if length > recordPayloadBytesMax {
		return 0, nil, 0, recordCorrupt
	}
	if int(length) > len(b)-recordHeaderBytes {
		return 0, nil, 0, recordTorn
	}
	payload := b[recordHeaderBytes : recordHeaderBytes+int(length)]
	if crc32.Update(crc, castagnoli, payload) != binary.BigEndian.Uint32(b[4:]) {
		return 0, nil, 0, recordCorrupt
	}
	d := &decoder{b: payload}
	revision = d.uvarint("revision")
	puts = d.puts()
	if d.end() != nil || revision == 0 {
		return 0, nil, 0, recordCorrupt
	}
	return revision, puts, recordHeaderBytes + int(length), recordOK
}

// snapshotMagic opens a snapshot file.
const snapshotMagic = "SNK1"

// encodeSnapshot writes the whole state: magic, revision, entries in key
// order, then a CRC-32C of everything before it.
func encodeSnapshot(s *state) []byte {
	b := []byte(snapshotMagic)
	b = appendUvarint(b, s.revision)
	keys := s.sortedKeys()
	b = appendUvarint(b, uint64(len(keys)))
	for _, k := range keys {
		e := s.entries[k]
		b = appendString(b, k)
		b = appendUvarint(b, e.version)
		b = appendBytes(b, e.value)
	}
	return binary.BigEndian.AppendUint32(b, crc32.Checksum(b, castagnoli))
}

// decodeSnapshot reads a snapshot into a fresh state.
func decodeSnapshot(b []byte) (*state, error) {
	if len(b) < len(snapshotMagic)+4 || string(b[:len(snapshotMagic)]) != snapshotMagic {
		return nil, errors.New("snapshot: bad magic or too short")
	}
	body := b[:len(b)-4]
	if crc32.Checksum(body, castagnoli) != binary.BigEndian.Uint32(b[len(b)-4:]) {
		return nil, errors.New("snapshot: checksum mismatch")
	}
	d := &decoder{b: body, off: len(snapshotMagic)}
	s := newState()
	s.revision = d.uvarint("revision")
	n := d.count("entries", len(body), 3)
	s.keys = make([]string, 0, n)
	for range n {
		k := d.str("key", KeyBytesMax)
		v := d.uvarint("version")
		val := d.bytes("value", ValueBytesMax)
		if d.err != nil {
			break
		}
		if v == 0 || v > s.revision || (len(s.keys) > 0 && s.keys[len(s.keys)-1] >= k) {
			return nil, fmt.Errorf("snapshot: entry %q (version %d) out of order or past revision %d", k, v, s.revision)
		}
		s.keys = append(s.keys, k)
		s.entries[k] = &entry{value: append(make([]byte, 0, len(val)), val...), version: v}
		s.bytes += int64(len(k) + len(val))
	}
	if err := d.end(); err != nil {
		return nil, fmt.Errorf("snapshot: %w", err)
	}
	return s, nil
}
