package record

import "encoding/binary"

// ControlType is the type of a control record, the second field of its key.
type ControlType int16

// Kafka's control record types. Only transaction markers are written here.
const (
	ControlAbort  ControlType = 0
	ControlCommit ControlType = 1
)

func (t ControlType) String() string {
	switch t {
	case ControlAbort:
		return "ABORT"
	case ControlCommit:
		return "COMMIT"
	}
	return "UNKNOWN"
}

// EndTxnMarker is a transaction marker: the control record a transaction
// coordinator has the partition leader append to end a transaction.
type EndTxnMarker struct {
	Type             ControlType
	CoordinatorEpoch int32
}

// Commit reports whether the marker commits (rather than aborts).
func (m EndTxnMarker) Commit() bool { return m.Type == ControlCommit }

const (
	controlKeySize   = 4 // version int16, type int16
	markerValueSize  = 6 // version int16, coordinator epoch int32
	controlVersion   = 0
	markerVersionMax = 1 // newer versions append tagged fields we may ignore
)

// EncodeEndTxnMarker builds the control batch Kafka writes for a marker:
// transactional and control flags, the producer's id and epoch, no
// sequence, one record at delta 0 stamped with timestamp (ms).
func EncodeEndTxnMarker(baseOffset int64, leaderEpoch int32, producerID int64, producerEpoch int16, timestamp int64, m EndTxnMarker) Batch {
	key := make([]byte, controlKeySize)
	binary.BigEndian.PutUint16(key[0:], controlVersion)
	binary.BigEndian.PutUint16(key[2:], uint16(m.Type))
	value := make([]byte, markerValueSize)
	binary.BigEndian.PutUint16(value[0:], controlVersion)
	binary.BigEndian.PutUint32(value[2:], uint32(m.CoordinatorEpoch))
	h := BatchHeader{
		BaseOffset:           baseOffset,
		PartitionLeaderEpoch: leaderEpoch,
		Attributes:           AttrTransactional | AttrControl,
		FirstTimestamp:       timestamp,
		ProducerID:           producerID,
		ProducerEpoch:        producerEpoch,
		BaseSequence:         NoSequence,
	}
	b, err := Encode(h, []Record{{Key: key, Value: value}})
	if err != nil {
		panic("record.EncodeEndTxnMarker: " + err.Error()) // uncompressed: cannot fail
	}
	return b
}

// ParseControlKey reads a control record's key: its version and type.
func ParseControlKey(key []byte) (ControlType, error) {
	if len(key) < controlKeySize {
		return 0, errorf(ErrInvalid, "control key of %d bytes", len(key))
	}
	if v := int16(binary.BigEndian.Uint16(key)); v != controlVersion {
		return 0, errorf(ErrInvalid, "control key version %d", v)
	}
	return ControlType(binary.BigEndian.Uint16(key[2:])), nil
}

// EndTxnMarker decodes the transaction marker of a control batch. It fails
// with ErrInvalid for a batch that is not a control batch holding exactly
// one commit or abort marker.
func (b Batch) EndTxnMarker() (EndTxnMarker, error) {
	if !b.IsControl() {
		return EndTxnMarker{}, errorf(ErrInvalid, "batch at offset %d is not a control batch", b.BaseOffset())
	}
	if n := b.RecordCount(); n != 1 {
		return EndTxnMarker{}, errorf(ErrInvalid, "control batch at offset %d holds %d records", b.BaseOffset(), n)
	}
	data, err := b.recordsData()
	if err != nil {
		return EndTxnMarker{}, err
	}
	var m EndTxnMarker
	err = decodeRecords(data, 1, func(_ int32, r *Record) error {
		t, err := ParseControlKey(r.Key)
		if err != nil {
			return err
		}
		if t != ControlAbort && t != ControlCommit {
			return errorf(ErrInvalid, "control type %d is not a transaction marker", t)
		}
		if len(r.Value) < markerValueSize {
			return errorf(ErrInvalid, "marker value of %d bytes", len(r.Value))
		}
		if v := int16(binary.BigEndian.Uint16(r.Value)); v < 0 || v > markerVersionMax {
			return errorf(ErrInvalid, "marker version %d", v)
		}
		m = EndTxnMarker{Type: t, CoordinatorEpoch: int32(binary.BigEndian.Uint32(r.Value[2:]))}
		return nil
	})
	return m, err
}
