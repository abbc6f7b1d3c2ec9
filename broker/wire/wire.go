package wire

import (
	"encoding/binary"
	"errors"
	"fmt"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// RequestHeader is the header of one request.
type RequestHeader struct {
	Key           int16
	Version       int16
	CorrelationID int32
	ClientID      *string
}

// Name is the API's name, e.g. "Produce".
func (h RequestHeader) Name() string { return kmsg.NameForKey(h.Key) }

// ErrMalformed is the error for a frame that does not parse.
var ErrMalformed = errors.New("malformed frame")

// UnsupportedError is a request for an API or version the process does not
// serve. The header parsed, so the caller can answer with Kafka's error.
type UnsupportedError struct {
	Header RequestHeader
}

func (e *UnsupportedError) Error() string {
	return fmt.Sprintf("unsupported API %s (key %d) version %d", e.Header.Name(), e.Header.Key, e.Header.Version)
}

// ParseRequest decodes one request frame. Requests whose key or version
// versions does not allow return an *UnsupportedError with the header; a
// frame that does not parse returns an error wrapping ErrMalformed.
func ParseRequest(frame []byte, versions Versions) (RequestHeader, kmsg.Request, error) {
	return ParseRequestReusing(frame, versions, nil)
}

// ParseRequestReusing is ParseRequest that sets the header's ClientID to
// clientID, not a new copy, when the frame's client id equals *clientID: a
// connection's requests carry one client id, so a server parsing them keeps
// the last one and allocates nothing for it.
func ParseRequestReusing(frame []byte, versions Versions, clientID *string) (RequestHeader, kmsg.Request, error) {
	var h RequestHeader
	if len(frame) < 8 {
		return h, nil, fmt.Errorf("%w: %d-byte request header", ErrMalformed, len(frame))
	}
	h.Key = int16(binary.BigEndian.Uint16(frame))
	h.Version = int16(binary.BigEndian.Uint16(frame[2:]))
	h.CorrelationID = int32(binary.BigEndian.Uint32(frame[4:]))
	b := frame[8:]
	clientID, b, err := readNullableString(b, clientID)
	if err != nil {
		return h, nil, fmt.Errorf("%w: client id: %v", ErrMalformed, err)
	}
	h.ClientID = clientID
	if !versions.Supports(h.Key, h.Version) {
		return h, nil, &UnsupportedError{Header: h}
	}
	req := kmsg.RequestForKey(h.Key)
	if req == nil {
		return h, nil, &UnsupportedError{Header: h}
	}
	req.SetVersion(h.Version)
	if req.IsFlexible() {
		if b, err = skipTags(b); err != nil {
			return h, nil, fmt.Errorf("%w: header tags: %v", ErrMalformed, err)
		}
	}
	if err := req.ReadFrom(b); err != nil {
		return h, nil, fmt.Errorf("%w: %s v%d body: %v", ErrMalformed, h.Name(), h.Version, err)
	}
	return h, req, nil
}

// AppendResponse encodes resp as the answer to the request with header h.
// resp's version is set to the request's.
func AppendResponse(dst []byte, h RequestHeader, resp kmsg.Response) []byte {
	resp.SetVersion(h.Version)
	dst = binary.BigEndian.AppendUint32(dst, uint32(h.CorrelationID))
	// ApiVersions answers with header v0 even when flexible, so a client
	// that does not yet know the broker's versions can read it.
	if resp.IsFlexible() && h.Key != 18 {
		dst = append(dst, 0) // no tagged fields
	}
	return resp.AppendTo(dst)
}

var formatter = kmsg.NewRequestFormatter()

// Formatter is the request formatter for clientID ("": none), for
// AppendRequestWith: a client builds its one once.
func Formatter(clientID string) *kmsg.RequestFormatter {
	if clientID == "" {
		return formatter
	}
	return kmsg.NewRequestFormatter(kmsg.FormatterClientID(clientID))
}

// AppendRequest encodes a request frame with its header.
func AppendRequest(dst []byte, req kmsg.Request, correlationID int32, clientID string) []byte {
	return AppendRequestWith(dst, Formatter(clientID), req, correlationID)
}

// AppendRequestWith is AppendRequest with the client's formatter.
func AppendRequestWith(dst []byte, f *kmsg.RequestFormatter, req kmsg.Request, correlationID int32) []byte {
	// Encode in place after dst, then drop the 4-byte size prefix (env
	// frames carry their length) by shifting the body down over it.
	start := len(dst)
	dst = f.AppendRequest(dst, req, correlationID)
	n := copy(dst[start:], dst[start+4:])
	return dst[:start+n]
}

// ResponseCorrelation reads the correlation id of a response frame.
func ResponseCorrelation(frame []byte) (int32, error) {
	if len(frame) < 4 {
		return 0, fmt.Errorf("%w: %d-byte response header", ErrMalformed, len(frame))
	}
	return int32(binary.BigEndian.Uint32(frame)), nil
}

// ParseResponse decodes the response to req (whose version must be set).
func ParseResponse(frame []byte, req kmsg.Request) (kmsg.Response, error) {
	if len(frame) < 4 {
		return nil, fmt.Errorf("%w: %d-byte response header", ErrMalformed, len(frame))
	}
	resp := req.ResponseKind()
	resp.SetVersion(req.GetVersion())
	b := frame[4:]
	if resp.IsFlexible() && req.Key() != 18 {
		var err error
		if b, err = skipTags(b); err != nil {
			return nil, fmt.Errorf("%w: response header tags: %v", ErrMalformed, err)
		}
	}
	if err := resp.ReadFrom(b); err != nil {
		return nil, fmt.Errorf("%w: %s v%d response: %v", ErrMalformed, kmsg.NameForKey(req.Key()), req.GetVersion(), err)
	}
	return resp, nil
}

// readNullableString reads a nullable string; one equal to *same is
// answered with same.
func readNullableString(b []byte, same *string) (*string, []byte, error) {
	if len(b) < 2 {
		return nil, b, errors.New("short length")
	}
	n := int16(binary.BigEndian.Uint16(b))
	b = b[2:]
	if n < 0 {
		return nil, b, nil
	}
	if int(n) > len(b) {
		return nil, b, fmt.Errorf("length %d past end (%d left)", n, len(b))
	}
	if same != nil && *same == string(b[:n]) { // compared without a copy
		return same, b[n:], nil
	}
	s := string(b[:n])
	return &s, b[n:], nil
}

func skipTags(b []byte) ([]byte, error) {
	count, n := binary.Uvarint(b)
	if n <= 0 {
		return b, errors.New("bad tag count")
	}
	b = b[n:]
	for range count {
		if _, n = binary.Uvarint(b); n <= 0 {
			return b, errors.New("bad tag key")
		}
		b = b[n:]
		size, n := binary.Uvarint(b)
		if n <= 0 || size > uint64(len(b)-n) {
			return b, errors.New("bad tag size")
		}
		b = b[n+int(size):]
	}
	return b, nil
}

// SizeHints remembers how long the last frame of each API key was, so the
// next one is encoded into a buffer sized for it at once instead of one
// grown by doubling (encoding was a sixth of all slice growth). The bytes
// are the same; only the allocations differ.
type SizeHints struct{ last [128]int32 }

// Buffer returns an empty buffer sized for a frame of API key key.
func (s *SizeHints) Buffer(key int16) []byte {
	if key < 0 || int(key) >= len(s.last) || s.last[key] == 0 {
		return nil
	}
	n := int(s.last[key])
	return make([]byte, 0, n+n/4+64)
}

// Saw records a frame of API key key.
func (s *SizeHints) Saw(key int16, frame []byte) []byte {
	if key >= 0 && int(key) < len(s.last) {
		s.last[key] = int32(min(len(frame), 1<<30))
	}
	return frame
}
