package env

import (
	"fmt"
	"time"
)

// Time is an instant on a node's clock, in nanoseconds since the Unix epoch.
type Time int64

// Add returns t+d.
func (t Time) Add(d time.Duration) Time { return t + Time(d) }

// Sub returns the duration t-u.
func (t Time) Sub(u Time) time.Duration { return time.Duration(t - u) }

// Before reports whether t is before u.
func (t Time) Before(u Time) bool { return t < u }

// UnixMilli is t in milliseconds since the Unix epoch, as Kafka timestamps are.
func (t Time) UnixMilli() int64 { return int64(t) / int64(time.Millisecond) }

// String prints t as seconds with nanosecond precision, which reads well for
// simulated times that start near zero and stays exact for replay.
func (t Time) String() string {
	sec := int64(t) / int64(time.Second)
	ns := int64(t) % int64(time.Second)
	if ns < 0 {
		return fmt.Sprintf("-%d.%09ds", -sec, -ns)
	}
	return fmt.Sprintf("%d.%09ds", sec, ns)
}
