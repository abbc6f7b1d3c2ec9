// Package host is the real-mode runtime: it implements env.Env over TCP, the
// wall clock and files, so that the broker, the controller and the clients
// run outside the simulator unchanged.
//
// A Node is one process on one listen address (and any named listeners
// beside it, Options.Listeners) with one data directory. Its contract is the
// simulator's:
//
//   - One event loop per node. Every Process method and every function given
//     to AfterFunc or Node.Do runs on that loop, one call at a time. Goroutines
//     exist only inside this package (one accepting, one reading and one
//     writing per connection, one per dial in progress); they hand their
//     events to the loop and never touch process state.
//   - Frames travel with Kafka's framing: a 4-byte big-endian length, then the
//     frame. An env frame is exactly the bytes after the length, so a real
//     Kafka client talks to a Process running here. An inbound length above
//     Options.FrameBytesMax (or negative) closes the connection before any
//     allocation, so a hostile length costs nothing.
//   - Env.Name is the listen address, Env.ListenerAddr a named listener's as
//     bound; Dial takes "host:port"; the peer of an inbound connection is its
//     remote address, of an outbound one the address dialed; Env.Listener
//     names the listener an inbound connection was accepted on.
//   - Env.Now is the wall clock at boot advanced by the monotonic clock, so it
//     never runs backwards under a clock step and agrees with the timers.
//     Timers fire on the loop in deadline order (ties in the order they were
//     set), never before their deadline; once Cancel returns true the timer's
//     function never runs, even if its deadline has already passed.
//   - The disk is a directory (see Disk); synced bytes and the metadata the
//     env.Disk contract calls durable survive a crash of the machine.
//   - Node.Stop is a crash as the process sees it: no further calls, its
//     memory dropped, every connection closed (peers are told), every timer
//     discarded. Restarting is host.Start again with the same Options.
//     Node.Shutdown is the clean stop (SIGTERM): the process's env.Stopper
//     runs on the loop first.
//
// Queues are bounded: a reader stops reading when its node's loop falls
// behind (TCP then pushes back on the peer), and a connection whose unsent
// frames exceed Options.SendQueueBytesMax is reset rather than grown.
package host
