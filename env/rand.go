package env

import (
	"encoding/hex"
	"math/bits"
	"time"
)

// Rand is a small, fast, deterministic random stream (SplitMix64). It exists
// so that process code never touches math/rand's global state: every stream
// is seeded by the world, and the same seed gives the same numbers on every
// machine.
type Rand struct {
	state uint64
}

// NewRand returns a stream seeded with seed.
func NewRand(seed uint64) *Rand { return &Rand{state: seed} }

// Uint64 returns the next 64 random bits.
func (r *Rand) Uint64() uint64 {
	r.state += 0x9e3779b97f4a7c15
	z := r.state
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Uint64n returns a number in [0, n). It panics if n is 0.
func (r *Rand) Uint64n(n uint64) uint64 {
	if n == 0 {
		panic("env.Rand.Uint64n: n is 0")
	}
	// Lemire's multiply-shift with rejection: unbiased and division-free.
	hi, lo := bits.Mul64(r.Uint64(), n)
	if lo < n {
		threshold := -n % n
		for lo < threshold {
			hi, lo = bits.Mul64(r.Uint64(), n)
		}
	}
	return hi
}

// Intn returns a number in [0, n). It panics if n <= 0.
func (r *Rand) Intn(n int) int {
	if n <= 0 {
		panic("env.Rand.Intn: n <= 0")
	}
	return int(r.Uint64n(uint64(n)))
}

// Int63n returns a number in [0, n). It panics if n <= 0.
func (r *Rand) Int63n(n int64) int64 {
	if n <= 0 {
		panic("env.Rand.Int63n: n <= 0")
	}
	return int64(r.Uint64n(uint64(n)))
}

// Float64 returns a number in [0, 1).
func (r *Rand) Float64() float64 { return float64(r.Uint64()>>11) / (1 << 53) }

// Chance reports true with probability p.
func (r *Rand) Chance(p float64) bool { return r.Float64() < p }

// Duration returns a duration uniformly drawn from [min, max]; min if max <= min.
func (r *Rand) Duration(min, max time.Duration) time.Duration {
	if max <= min {
		return min
	}
	return min + time.Duration(r.Uint64n(uint64(max-min)+1))
}

// Fork returns an independent stream derived from this one's seed and a
// name, without advancing this stream. Streams forked under different names
// do not move each other.
func (r *Rand) Fork(name string) *Rand {
	return &Rand{state: mixString(r.state, name)}
}

// Shuffle permutes n elements with swap.
func (r *Rand) Shuffle(n int, swap func(i, j int)) {
	for i := n - 1; i > 0; i-- {
		swap(i, r.Intn(i+1))
	}
}

// mixString folds name into seed with FNV-1a and a final avalanche, so that
// similar names give unrelated seeds.
func mixString(seed uint64, name string) uint64 {
	h := seed ^ 0xcbf29ce484222325
	for i := 0; i < len(name); i++ {
		h ^= uint64(name[i])
		h *= 0x100000001b3
	}
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// UUID is a random (version 4) UUID in its text form, as Kafka makes
// member ids: 16 draws, one byte each.
func (r *Rand) UUID() string {
	var u [16]byte
	for i := range u {
		u[i] = byte(r.Uint64())
	}
	u[6] = u[6]&0x0f | 0x40
	u[8] = u[8]&0x3f | 0x80
	h := hex.EncodeToString(u[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:]
}
