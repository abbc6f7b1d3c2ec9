package faults

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kafkasim/kafkasim/env"
)

// Role is what a Target names: one node, or a part a node plays in the
// cluster at the moment an action fires.
type Role uint8

const (
	RoleNode             Role = iota + 1 // a node by name: "n1"
	RoleTag                              // the node an earlier action resolved to: "$1"
	RoleLeader                           // "leader of orders/0"
	RoleFollower                         // "a follower of orders/0"
	RoleController                       // "the active controller" (also parsed: "the controller")
	RoleGroupCoordinator                 // "the group coordinator of billing"
	RoleTxnCoordinator                   // "the transaction coordinator of tx-1"
	RoleRandomBroker                     // "a random broker"
	RoleClient                           // "a client"
	RoleProbed                           // "the probed node": the node whose probe hit fired a trigger
	RoleAnyController                    // "a controller": one of the quorum's, chosen when the action fires
)

// Target is a node, named or found by role when its action fires. It prints
// as the phrase it parses from: "n1", "$1", "leader of orders/0", "a
// follower of orders/0", "the controller", "the group coordinator of
// billing", "the transaction coordinator of tx-1", "a random broker", "a
// client". Names (of nodes, tags, topics, groups, transactional ids) are
// single words: no spaces, brackets, commas, quotes or a leading '$'.
type Target struct {
	Role Role
	// Name is the node's name (RoleNode), the tag (RoleTag), the group
	// (RoleGroupCoordinator) or the transactional id (RoleTxnCoordinator).
	Name string
	// Topic and Partition name the partition of RoleLeader and RoleFollower.
	Topic     string
	Partition int32
}

// Node targets the node named name.
func Node(name string) Target { return Target{Role: RoleNode, Name: name} }

// Tagged targets the node that the action tagged tag resolved to.
func Tagged(tag string) Target { return Target{Role: RoleTag, Name: tag} }

// Leader targets the leader of topic/partition when the action fires.
func Leader(topic string, partition int32) Target {
	return Target{Role: RoleLeader, Topic: topic, Partition: partition}
}

// Follower targets one follower of topic/partition, chosen when the action fires.
func Follower(topic string, partition int32) Target {
	return Target{Role: RoleFollower, Topic: topic, Partition: partition}
}

// Controller targets the active controller: the quorum's leader, when the
// action fires.
func Controller() Target { return Target{Role: RoleController} }

// AnyController targets one of the controllers, chosen when the action
// fires.
func AnyController() Target { return Target{Role: RoleAnyController} }

// GroupCoordinator targets the coordinator of a consumer group.
func GroupCoordinator(group string) Target { return Target{Role: RoleGroupCoordinator, Name: group} }

// TxnCoordinator targets the transaction coordinator of a transactional id.
func TxnCoordinator(transactionalID string) Target {
	return Target{Role: RoleTxnCoordinator, Name: transactionalID}
}

// RandomBroker targets one broker, chosen when the action fires.
func RandomBroker() Target { return Target{Role: RoleRandomBroker} }

// AnyClient targets one client application, chosen when the action fires.
func AnyClient() Target { return Target{Role: RoleClient} }

// Probed targets the node whose probe hit fired the action's trigger.
func Probed() Target { return Target{Role: RoleProbed} }

// IsZero reports whether t names nothing (an action without a peer).
func (t Target) IsZero() bool { return t == Target{} }

// IsRole reports whether t is resolved by a Resolver (not a node name or a tag).
func (t Target) IsRole() bool { return t.Role > RoleTag }

func (t Target) String() string {
	switch t.Role {
	case RoleNode:
		return t.Name
	case RoleTag:
		return "$" + t.Name
	case RoleLeader:
		return fmt.Sprintf("leader of %s/%d", t.Topic, t.Partition)
	case RoleFollower:
		return fmt.Sprintf("a follower of %s/%d", t.Topic, t.Partition)
	case RoleController:
		return "the active controller"
	case RoleAnyController:
		return "a controller"
	case RoleGroupCoordinator:
		return "the group coordinator of " + t.Name
	case RoleTxnCoordinator:
		return "the transaction coordinator of " + t.Name
	case RoleRandomBroker:
		return "a random broker"
	case RoleClient:
		return "a client"
	case RoleProbed:
		return "the probed node"
	case 0:
		return ""
	}
	return fmt.Sprintf("role(%d)", t.Role)
}

// ParseTarget parses the phrase a Target prints as. An unknown phrase is an
// error that quotes it.
func ParseTarget(s string) (Target, error) {
	s = strings.TrimSpace(s)
	words := strings.Fields(s)
	phrase := strings.Join(words, " ")
	rest := func(prefix string) (string, bool) {
		if !strings.HasPrefix(phrase, prefix) {
			return "", false
		}
		return phrase[len(prefix):], true
	}
	var t Target
	switch {
	case len(words) == 0:
		return Target{}, fmt.Errorf("faults: empty target")
	case phrase == "the active controller" || phrase == "the controller":
		t = Controller()
	case phrase == "a controller":
		t = AnyController()
	case phrase == "a random broker":
		t = RandomBroker()
	case phrase == "a client":
		t = AnyClient()
	case phrase == "the probed node":
		t = Probed()
	default:
		if tp, ok := rest("leader of "); ok {
			topic, p, err := parseTopicPartition(tp)
			if err != nil {
				return Target{}, fmt.Errorf("faults: target %q: %w", s, err)
			}
			t = Leader(topic, p)
		} else if tp, ok := rest("a follower of "); ok {
			topic, p, err := parseTopicPartition(tp)
			if err != nil {
				return Target{}, fmt.Errorf("faults: target %q: %w", s, err)
			}
			t = Follower(topic, p)
		} else if g, ok := rest("the group coordinator of "); ok {
			t = GroupCoordinator(g)
		} else if id, ok := rest("the transaction coordinator of "); ok {
			t = TxnCoordinator(id)
		} else if len(words) == 1 && strings.HasPrefix(phrase, "$") {
			t = Tagged(phrase[1:])
		} else if len(words) == 1 {
			t = Node(phrase)
		} else {
			return Target{}, fmt.Errorf("faults: unknown role %q (known: a node name, $tag, %s)", s, knownRoles)
		}
	}
	if err := t.validate(); err != nil {
		return Target{}, err
	}
	return t, nil
}

const knownRoles = `"leader of T/P", "a follower of T/P", "the controller", ` +
	`"the group coordinator of G", "the transaction coordinator of ID", "a random broker", "a client", "the probed node"`

func parseTopicPartition(s string) (string, int32, error) {
	i := strings.LastIndexByte(s, '/')
	if i <= 0 {
		return "", 0, fmt.Errorf("want topic/partition, got %q", s)
	}
	p, err := strconv.ParseInt(s[i+1:], 10, 32)
	if err != nil || p < 0 {
		return "", 0, fmt.Errorf("bad partition in %q", s)
	}
	return s[:i], int32(p), nil
}

// validName reports whether s can stand as one word of a printed action.
func validName(s string) bool {
	return s != "" && s != "->" && s != "<->" && !strings.ContainsAny(s, " \t\n\r[],\"") &&
		!strings.HasPrefix(s, "$") && !strings.HasPrefix(s, "+")
}

func (t Target) validate() error {
	bad := func(what, name string) error {
		return fmt.Errorf("faults: target %q: bad %s %q (one word, no brackets, commas, quotes or leading '$' or '+')", t.String(), what, name)
	}
	switch t.Role {
	case RoleNode:
		if !validName(t.Name) {
			return bad("node name", t.Name)
		}
	case RoleTag:
		if !validName(t.Name) {
			return bad("tag", t.Name)
		}
	case RoleLeader, RoleFollower:
		if !validName(t.Topic) {
			return bad("topic", t.Topic)
		}
		if t.Partition < 0 {
			return fmt.Errorf("faults: target %q: negative partition", t.String())
		}
	case RoleGroupCoordinator:
		if !validName(t.Name) {
			return bad("group", t.Name)
		}
	case RoleTxnCoordinator:
		if !validName(t.Name) {
			return bad("transactional id", t.Name)
		}
	case RoleController, RoleAnyController, RoleRandomBroker, RoleClient, RoleProbed:
	default:
		return fmt.Errorf("faults: unknown role %d", t.Role)
	}
	switch t.Role {
	case RoleLeader, RoleFollower:
		if t.Name != "" {
			return fmt.Errorf("faults: target %q: stray name %q", t.String(), t.Name)
		}
	default:
		if t.Topic != "" || t.Partition != 0 {
			return fmt.Errorf("faults: target %q: stray topic/partition", t.String())
		}
	}
	return nil
}

// MarshalText prints t as its phrase.
func (t Target) MarshalText() ([]byte, error) {
	if err := t.validate(); err != nil {
		return nil, err
	}
	return []byte(t.String()), nil
}

// UnmarshalText parses a phrase.
func (t *Target) UnmarshalText(b []byte) error {
	v, err := ParseTarget(string(b))
	if err != nil {
		return err
	}
	*t = v
	return nil
}

// Resolver finds the node that plays a role at the moment an action fires.
// The scenario runner implements it over the live cluster, so this package
// never imports the broker. Node names and tags never reach it.
type Resolver interface {
	// Resolve names the node playing role t now, or reports false when none
	// does (no leader elected yet, no client running). r is the schedule's
	// own random stream, for roles that pick one of several: "a follower",
	// "a random broker", "a client".
	Resolve(t Target, r *env.Rand) (node string, ok bool)
}

// ResolverFunc adapts a function to a Resolver.
type ResolverFunc func(t Target, r *env.Rand) (string, bool)

// Resolve calls f.
func (f ResolverFunc) Resolve(t Target, r *env.Rand) (string, bool) { return f(t, r) }
