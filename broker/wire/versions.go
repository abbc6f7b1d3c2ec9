package wire

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Range is the versions of one API a process serves.
type Range struct {
	Key      int16
	Min, Max int16
	Note     string // how it is served, for the README's API table
}

// Versions is the set of APIs a process serves, sorted by key.
type Versions []Range

// Supports reports whether the process serves version v of API key.
func (vs Versions) Supports(key, v int16) bool {
	i, ok := slices.BinarySearchFunc(vs, key, func(r Range, k int16) int { return int(r.Key) - int(k) })
	return ok && v >= vs[i].Min && v <= vs[i].Max
}

// Lookup returns the range of API key.
func (vs Versions) Lookup(key int16) (Range, bool) {
	i, ok := slices.BinarySearchFunc(vs, key, func(r Range, k int16) int { return int(r.Key) - int(k) })
	if !ok {
		return Range{}, false
	}
	return vs[i], true
}

// NewVersions sorts ranges into a Versions and checks them against what
// kmsg can encode.
func NewVersions(ranges ...Range) Versions {
	vs := slices.Clone(ranges)
	slices.SortFunc(vs, func(a, b Range) int { return int(a.Key) - int(b.Key) })
	for i, r := range vs {
		req := kmsg.RequestForKey(r.Key)
		if req == nil || r.Min < 0 || r.Min > r.Max || r.Max > req.MaxVersion() {
			panic("wire: impossible version range for " + kmsg.NameForKey(r.Key))
		}
		if i > 0 && vs[i-1].Key == r.Key {
			panic("wire: API listed twice: " + kmsg.NameForKey(r.Key))
		}
	}
	return vs
}

// ApiVersionsResponse lists vs, as a process answers ApiVersions. A request
// for an ApiVersions version the process does not serve gets error
// UNSUPPORTED_VERSION at version 0, as Kafka does, so the client can retry.
func (vs Versions) ApiVersionsResponse(requested int16) *kmsg.ApiVersionsResponse {
	resp := kmsg.NewPtrApiVersionsResponse()
	if !vs.Supports(18, requested) {
		resp.ErrorCode = 35 // UNSUPPORTED_VERSION
	}
	for _, r := range vs {
		k := kmsg.NewApiVersionsResponseApiKey()
		k.ApiKey, k.MinVersion, k.MaxVersion = r.Key, r.Min, r.Max
		resp.ApiKeys = append(resp.ApiKeys, k)
	}
	return resp
}

// Highest returns the highest version both vs (the server's ranges, from
// ApiVersions) and this client (max) speak for key, and false if none.
func (vs Versions) Highest(key, max int16) (int16, bool) {
	r, ok := vs.Lookup(key)
	if !ok || r.Min > max {
		return 0, false
	}
	return min(r.Max, max), true
}
