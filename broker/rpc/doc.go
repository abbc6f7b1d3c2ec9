// Package rpc carries Kafka requests over env connections: a Server that
// hands a process its inbound requests one connection-head at a time, as a
// Kafka broker mutes a connection until it has answered, and a Client that
// dials, negotiates versions with ApiVersions, pipelines requests, matches
// responses by correlation id and times them out.
//
// A process owns one Router and forwards its env.Process connection
// callbacks to it; the Router gives each connection to its Client or, for
// inbound ones, to the Server.
//
// Client errors say what is known about a request's fate: ErrNotSent means
// it certainly never left (a definite failure), ErrDisconnected and
// ErrTimeout mean it may or may not have been processed (indefinite).
package rpc
