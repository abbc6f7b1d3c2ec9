package history

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
)

// opJSON is Op on the wire: "return" is absent for an operation that never
// completed, so a history file never carries a sentinel time.
type opJSON struct {
	ID      ID      `json:"id"`
	Process string  `json:"process"`
	Node    string  `json:"node,omitempty"`
	Kind    Kind    `json:"kind"`
	Call    int64   `json:"call"`
	Return  *int64  `json:"return,omitempty"`
	Outcome Outcome `json:"outcome"`
	Error   string  `json:"error,omitempty"`

	Send        *Send        `json:"send,omitempty"`
	Poll        *Poll        `json:"poll,omitempty"`
	Assign      *Assign      `json:"assign,omitempty"`
	Subscribe   *Subscribe   `json:"subscribe,omitempty"`
	Rebalance   *Rebalance   `json:"rebalance,omitempty"`
	Seek        *Seek        `json:"seek,omitempty"`
	Commit      *Commit      `json:"commit,omitempty"`
	OffsetFetch *OffsetFetch `json:"offset_fetch,omitempty"`
	Txn         *Txn         `json:"txn,omitempty"`
	SinkWrite   *SinkWrite   `json:"sink_write,omitempty"`
	FinalRead   *FinalRead   `json:"final_read,omitempty"`
	Nemesis     *Nemesis     `json:"nemesis,omitempty"`
	Replica     *Replica     `json:"replica,omitempty"`
}

// MarshalJSON writes the op with "return" omitted when it never completed.
func (op Op) MarshalJSON() ([]byte, error) {
	w := opJSON{
		ID: op.ID, Process: op.Process, Node: op.Node, Kind: op.Kind, Call: op.Call,
		Outcome: op.Outcome, Error: op.Error,
		Send: op.Send, Poll: op.Poll, Assign: op.Assign, Subscribe: op.Subscribe,
		Rebalance: op.Rebalance, Seek: op.Seek, Commit: op.Commit, OffsetFetch: op.OffsetFetch,
		Txn: op.Txn, SinkWrite: op.SinkWrite, FinalRead: op.FinalRead, Nemesis: op.Nemesis, Replica: op.Replica,
	}
	if op.Return != Never {
		r := op.Return
		w.Return = &r
	}
	return json.Marshal(w)
}

// UnmarshalJSON reads an op; an absent "return" means it never completed.
func (op *Op) UnmarshalJSON(b []byte) error {
	var w opJSON
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&w); err != nil {
		return err
	}
	*op = Op{
		ID: w.ID, Process: w.Process, Node: w.Node, Kind: w.Kind, Call: w.Call, Return: Never,
		Outcome: w.Outcome, Error: w.Error,
		Send: w.Send, Poll: w.Poll, Assign: w.Assign, Subscribe: w.Subscribe,
		Rebalance: w.Rebalance, Seek: w.Seek, Commit: w.Commit, OffsetFetch: w.OffsetFetch,
		Txn: w.Txn, SinkWrite: w.SinkWrite, FinalRead: w.FinalRead, Nemesis: w.Nemesis, Replica: w.Replica,
	}
	if w.Return != nil {
		op.Return = *w.Return
	}
	return nil
}

// Write writes h as JSON lines, one operation per line: the bytes
// encoding/json writes for each (Op.MarshalJSON), written without it.
func (h History) Write(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 1<<16)
	var line []byte
	for i := range h {
		line = append(appendOp(line[:0], &h[i]), '\n')
		if _, err := bw.Write(line); err != nil {
			return fmt.Errorf("history: writing %s: %w", h[i].String(), err)
		}
	}
	return bw.Flush()
}

// remaining is how many bytes r has left to read, if it can say (a
// regular file, or a reader with a Len such as bytes.Reader); -1 if not.
func remaining(r io.Reader) int64 {
	switch r := r.(type) {
	case interface{ Len() int }:
		return int64(r.Len())
	case *os.File:
		fi, err := r.Stat()
		if err != nil || !fi.Mode().IsRegular() {
			return -1
		}
		at, err := r.Seek(0, io.SeekCurrent)
		if err != nil {
			return -1
		}
		return fi.Size() - at
	}
	return -1
}

// room decides how much room Read makes for a history as it grows. When
// the history is full it makes room for as many more operations as the
// bytes left hold at the length of the lines read since it last grew, with
// 5% to spare, but at most as many as it holds: the lines left may be
// longer (a history's final reads, last, hold whole partitions). So the
// history doubles until a last step that fits it, where append grows a
// large slice by 1.25x, copying it many more times and leaving up to a
// quarter unused. Reading 100,000 operations from a bytes.Reader allocated
// 195 MB, 123 MB with this; kafkasim check of a 1M-operation file held
// 1.45 GB resident, 1.25 GB with this. Whatever the lines, it never
// reserves more than twice the operations read.
type room struct {
	size int64 // the bytes the reader held when Read began, -1 if unknown
	read int64 // the bytes read since
	// the bytes read and the operations held when the history last grew
	markRead int64
	markOps  int
}

// more is how many more operations to make room for, n being held.
func (r *room) more(n int) int {
	defer func() { r.markRead, r.markOps = r.read, n }()
	switch {
	case r.size < 0 || r.read >= r.size:
		return 1 // append's growth
	case n < 1024:
		return 1024 - n // until the lines' length is known
	}
	perOp := float64(r.read-r.markRead) / float64(n-r.markOps) // a line holds one operation: never 0
	return min(int(float64(r.size-r.read)/perOp*1.05)+64, n)
}

// Read reads a history written by Write. Blank lines are skipped; unknown
// fields are refused (a misspelt field would otherwise vanish silently),
// and so are a field given twice and a name in another case than the
// format's. Whatever Read accepts, encoding/json reads the same way
// (Op.UnmarshalJSON). Read does not validate; call Validate.
func Read(r io.Reader) (History, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	room := room{size: remaining(r)}
	var h History
	var d decoder
	var long []byte // a line longer than the reader's buffer
	for line := 1; ; line++ {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], b...)
			for errors.Is(err, bufio.ErrBufferFull) {
				b, err = br.ReadSlice('\n')
				long = append(long, b...)
			}
			b = long
		}
		room.read += int64(len(b))
		if len(bytes.TrimSpace(b)) > 0 {
			d.b, d.i = b, 0
			if len(h) == cap(h) {
				h = slices.Grow(h, room.more(len(h)))
			}
			h = append(h, Op{})
			if derr := d.op(&h[len(h)-1]); derr != nil {
				return nil, fmt.Errorf("history: line %d: %w", line, derr)
			}
		}
		if errors.Is(err, io.EOF) {
			return h, nil
		}
		if err != nil {
			return nil, fmt.Errorf("history: line %d: %w", line, err)
		}
	}
}
