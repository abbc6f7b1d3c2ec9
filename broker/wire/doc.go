// Package wire frames Kafka requests and responses: the request header
// (API key, version, correlation id, client id, tagged fields), the response
// header, and the body through github.com/twmb/franz-go/pkg/kmsg. Frames here
// are what env connections carry — the bytes after Kafka's 4-byte size
// prefix, which the real-mode runtime adds on TCP.
//
// Parsing never panics on hostile input: a malformed frame is an error, and
// the caller closes the connection.
package wire
