package sink

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// seedRequests are well-formed requests of every op, for the fuzz corpus.
func seedRequests() [][]byte {
	return [][]byte{
		encodeRequest(&request{id: 1, op: opWrite, puts: []Put{{Key: "out/1", Value: []byte("v")}, {Key: "offset/p0", Value: []byte("7")}, {Key: "gone", Delete: true}},
			conds: []Condition{IfVersion("offset/p0", 3), IfValue("epoch", []byte("2")), IfAbsent("new")}}),
		encodeRequest(&request{id: 2, op: opGet, keys: []string{"a", "b"}}),
		encodeRequest(&request{id: 300, op: opScan, scan: ScanRange{Prefix: "out/", After: "out/1", Limit: 10}}),
	}
}

func seedResponses() [][]byte {
	return [][]byte{
		encodeResponse(&response{id: 1, op: opWrite, revision: 9}),
		encodeResponse(&response{id: 2, op: opGet, revision: 9, entries: []Entry{{Value: []byte("x"), Version: 3}, {}}}),
		encodeResponse(&response{id: 3, op: opScan, revision: 9, more: true, entries: []Entry{{Key: "a", Value: []byte{}, Version: 1}}}),
		encodeResponse(&response{id: 4, op: opWrite, status: statusConditionFailed, index: 1, version: 5}),
		encodeResponse(&response{id: 5, op: opGet, status: statusUnavailable, message: "recovering"}),
	}
}

// FuzzDecodeRequest feeds hostile bytes to the server's decoder: it never
// panics, and whatever it accepts re-encodes to a frame that decodes the
// same.
func FuzzDecodeRequest(f *testing.F) {
	for _, b := range seedRequests() {
		f.Add(b)
		f.Add(b[:len(b)-1])
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		r, err := decodeRequest(frame)
		if err != nil {
			return
		}
		again, err := decodeRequest(encodeRequest(r))
		require.NoError(t, err)
		require.Equal(t, normalizeRequest(r), normalizeRequest(again))
		_ = validateWrite(r.puts, r.conds)
		_ = validateKeys(r.keys)
		_ = validateScan(r.scan)
	})
}

// FuzzDecodeResponse does the same for the client's decoder.
func FuzzDecodeResponse(f *testing.F) {
	for _, b := range seedResponses() {
		f.Add(b)
		f.Add(b[:len(b)-1])
	}
	f.Fuzz(func(t *testing.T, frame []byte) {
		r, err := decodeResponse(frame)
		if err != nil {
			return
		}
		again, err := decodeResponse(encodeResponse(r))
		require.NoError(t, err)
		require.Equal(t, normalizeResponse(r), normalizeResponse(again))
	})
}

// FuzzReadLog feeds hostile bytes to recovery's record reader and the
// snapshot decoder: no panics; a record read re-encodes to itself.
func FuzzReadLog(f *testing.F) {
	s := newState()
	p := []Put{{Key: "k", Value: []byte("v")}, {Key: "d", Delete: true}}
	s.apply(p)
	rec := appendRecord(nil, 1, p)
	f.Add(rec)
	f.Add(rec[:len(rec)-2])
	f.Add(encodeSnapshot(s))
	f.Fuzz(func(t *testing.T, data []byte) {
		if rev, puts, n, fate := readRecord(data); fate == recordOK {
			require.Equal(t, data[:n], appendRecord(nil, rev, puts))
		}
		if st, err := decodeSnapshot(data); err == nil {
			st.checkInvariants()
		}
	})
}

// normalize* make nil and empty slices compare equal.
func normalizeRequest(r *request) *request {
	c := *r
	c.puts = append([]Put{}, r.puts...)
	for i := range c.puts {
		c.puts[i].Value = append([]byte{}, c.puts[i].Value...)
	}
	c.conds = append([]Condition{}, r.conds...)
	for i := range c.conds {
		c.conds[i].Value = append([]byte{}, c.conds[i].Value...)
	}
	c.keys = append([]string{}, r.keys...)
	return &c
}

func normalizeResponse(r *response) *response {
	c := *r
	c.entries = append([]Entry{}, r.entries...)
	for i := range c.entries {
		c.entries[i].Value = append([]byte{}, c.entries[i].Value...)
	}
	return &c
}
