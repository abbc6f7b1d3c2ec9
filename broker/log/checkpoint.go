package log

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"strconv"
	"strings"

	"github.com/kafkasim/kafkasim/env"
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Checkpoint files are Kafka's text format — a version line, a count line,
// one line per entry — followed by a line "crc32c <hex>" over everything
// before it, so that a flipped byte is noticed instead of read as a
// plausible number.
const checkpointVersion = 0

func encodeCheckpoint(lines []string) []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%d\n%d\n", checkpointVersion, len(lines))
	for _, l := range lines {
		b.WriteString(l)
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "crc32c %08x\n", crc32.Checksum(b.Bytes(), castagnoli))
	return b.Bytes()
}

// decodeCheckpoint returns the entry lines, or an error for a file that is
// malformed or fails its CRC.
func decodeCheckpoint(data []byte) ([]string, error) {
	i := bytes.LastIndex(data[:max(len(data)-1, 0)], []byte("\n"))
	if i < 0 {
		return nil, fmt.Errorf("no crc line")
	}
	body, tail := data[:i+1], strings.TrimSuffix(string(data[i+1:]), "\n")
	if want := fmt.Sprintf("crc32c %08x", crc32.Checksum(body, castagnoli)); tail != want {
		return nil, fmt.Errorf("crc line %q, want %q", tail, want)
	}
	lines := strings.Split(strings.TrimSuffix(string(body), "\n"), "\n")
	if len(lines) < 2 || lines[0] != strconv.Itoa(checkpointVersion) {
		return nil, fmt.Errorf("bad version line")
	}
	n, err := strconv.Atoi(lines[1])
	if err != nil || n != len(lines)-2 {
		return nil, fmt.Errorf("count line %q for %d entries", lines[1], len(lines)-2)
	}
	return lines[2:], nil
}

func writeCheckpoint(d env.Disk, name string, lines []string) error {
	return env.WriteFileAtomic(d, name, encodeCheckpoint(lines))
}

// readCheckpoint returns the entry lines; ok is false when the file is
// missing or unreadable as a checkpoint (err says which, nil if missing).
func readCheckpoint(d Files, name string) (lines []string, ok bool, err error) {
	data, err := d.ReadFile(name)
	if err != nil {
		if isNotExist(err) {
			return nil, false, nil
		}
		return nil, false, err
	}
	lines, err = decodeCheckpoint(data)
	if err != nil {
		return nil, false, fmt.Errorf("%s: %w", name, err)
	}
	return lines, true, nil
}
