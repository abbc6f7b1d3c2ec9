package sink

// Protocol limits. Client and server enforce the same numbers: the client
// refuses a request past them before sending it (a definite ErrInvalid),
// the server answers one that slipped through with ErrInvalid too.
const (
	// KeyBytesMax bounds a key's length; a key is never empty.
	KeyBytesMax = 1024
	// ValueBytesMax bounds a value's length.
	ValueBytesMax = 1 << 20
	// PutsMax bounds the puts of one write.
	PutsMax = 1024
	// ConditionsMax bounds the conditions of one write.
	ConditionsMax = 64
	// GetKeysMax bounds the keys of one Get.
	GetKeysMax = 1024
	// ScanLimitMax bounds the entries of one Scan answer (and is the limit
	// used when a ScanRange asks for 0).
	ScanLimitMax = 1000
	// FrameBytesMax bounds an encoded request or response.
	FrameBytesMax = 8 << 20
)

// Put sets Key to Value, or with Delete removes Key (Value is then ignored).
// An empty Value is stored as an empty, present value.
type Put struct {
	Key    string
	Value  []byte
	Delete bool
}

// ConditionKind says what a Condition compares.
type ConditionKind uint8

const (
	// VersionIs holds when the key's version equals Version; version 0
	// means the key is absent.
	VersionIs ConditionKind = 1
	// ValueIs holds when the key is present and its value equals Value.
	ValueIs ConditionKind = 2
)

func (k ConditionKind) String() string {
	switch k {
	case VersionIs:
		return "version-is"
	case ValueIs:
		return "value-is"
	}
	return "unknown-condition"
}

// Condition is a compare-and-set guard of a write: the write happens only
// if every one of its conditions holds in the state the write is applied
// to. A zombie consumer is fenced by making its writes conditional on a key
// that its successor changes (IfValue on an epoch key, or IfVersion on the
// offsets it read).
type Condition struct {
	Key     string
	Kind    ConditionKind
	Version uint64 // for VersionIs
	Value   []byte // for ValueIs
}

// IfVersion holds when key's version is version (0: key absent).
func IfVersion(key string, version uint64) Condition {
	return Condition{Key: key, Kind: VersionIs, Version: version}
}

// IfAbsent holds when key is absent.
func IfAbsent(key string) Condition { return IfVersion(key, 0) }

// IfValue holds when key is present with value.
func IfValue(key string, value []byte) Condition {
	return Condition{Key: key, Kind: ValueIs, Value: value}
}

// Entry is a key as a read found it. Version is the revision of the write
// that last set the key; 0 (with a nil Value) means the key is absent.
type Entry struct {
	Key     string
	Value   []byte
	Version uint64
}

// Present reports whether the key exists.
func (e Entry) Present() bool { return e.Version != 0 }

// Result is a write's acknowledgement: the write is durable, and Revision
// is its position in the store's total order of writes (and the new
// version of every key it put).
type Result struct {
	Revision uint64
}

// GetResult answers a Get: one Entry per key asked, in the order asked,
// and the store's revision the read saw.
type GetResult struct {
	Entries  []Entry
	Revision uint64
}

// ScanRange selects the keys of a Scan: those starting with Prefix and
// sorting after After (use the last key of a previous answer to page on),
// at most Limit of them (0: ScanLimitMax).
type ScanRange struct {
	Prefix string
	After  string
	Limit  int
}

// ScanResult answers a Scan: present entries in key order, the store's
// revision the read saw, and whether more keys matched past Limit.
type ScanResult struct {
	Entries  []Entry
	Revision uint64
	More     bool
}
