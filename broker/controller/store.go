package controller

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"hash/crc32"

	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/env"
)

// The metadata log: one record per line, "crc32c length json\n" so that a
// torn or corrupt tail is recognised and cut on recovery.
const metadataLog = "controller/metadata.log"

// record is one entry of the metadata log; exactly one field is set.
type record struct {
	Broker      *brokerRecord       `json:"broker,omitempty"`
	Topic       *metadata.Topic     `json:"topic,omitempty"`
	Partition   *metadata.Partition `json:"partition,omitempty"`
	ProducerIDs int64               `json:"producerIds,omitempty"` // next unallocated producer id
	Epoch       int32               `json:"controllerEpoch,omitempty"`
}

type brokerRecord struct {
	ID          int32    `json:"id"`
	Addr        string   `json:"addr"`
	Epoch       int64    `json:"epoch"`
	Incarnation [16]byte `json:"incarnation"`
}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

type store struct {
	disk    env.Disk
	records int64 // records in the log: the next record's offset
}

func encodeRecord(r record) []byte {
	body, err := json.Marshal(r)
	if err != nil {
		panic(fmt.Sprintf("controller: metadata record does not encode: %v", err))
	}
	var hdr [8]byte
	binary.BigEndian.PutUint32(hdr[:4], crc32.Checksum(body, castagnoli))
	binary.BigEndian.PutUint32(hdr[4:], uint32(len(body)))
	return append(append(hdr[:], body...), '\n')
}

// load reads every intact record; a torn or corrupt tail is cut off.
func (s *store) load(apply func(record)) error {
	data, err := s.disk.ReadFile(metadataLog)
	if err != nil {
		if isNotExist(err) {
			return nil
		}
		return fmt.Errorf("read %s: %w", metadataLog, err)
	}
	off := 0
	for off < len(data) {
		r, n, ok := decodeRecord(data[off:])
		if !ok {
			break
		}
		apply(r)
		s.records++
		off += n
	}
	if off < len(data) {
		if err := s.disk.Truncate(metadataLog, int64(off)); err != nil {
			return fmt.Errorf("cut torn tail of %s at %d: %w", metadataLog, off, err)
		}
	}
	return nil
}

func decodeRecord(b []byte) (record, int, bool) {
	var r record
	if len(b) < 9 {
		return r, 0, false
	}
	sum := binary.BigEndian.Uint32(b)
	n := int(binary.BigEndian.Uint32(b[4:]))
	if n > len(b)-9 || b[8+n] != '\n' {
		return r, 0, false
	}
	body := b[8 : 8+n]
	if crc32.Checksum(body, castagnoli) != sum || json.Unmarshal(body, &r) != nil {
		return r, 0, false
	}
	return r, 9 + n, true
}

// append writes records durably; the caller applies them only after.
func (s *store) append(rs ...record) error {
	var buf bytes.Buffer
	for _, r := range rs {
		buf.Write(encodeRecord(r))
	}
	if err := s.disk.Append(metadataLog, buf.Bytes()); err != nil {
		return err
	}
	if err := s.disk.Sync(metadataLog); err != nil {
		return err
	}
	s.records += int64(len(rs))
	return nil
}
