package scenarios

import (
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
)

// Setting is one knob of a scenario file and its value as text.
type Setting struct{ Name, Value string }

func (kv Setting) String() string { return kv.Name + "=" + kv.Value }

// Set returns s with knobs changed, each named as the scenario file names
// it — a Kafka config name (acks, enable.idempotence,
// min.insync.replicas, log.flush.interval.messages, isolation.level, ...),
// a workload key (commit, messages, abort.percent, ...), or a top-level
// one (faults, faults.rate) — with its value as text: "all", "true", "2",
// "null". The settings apply together, then the result is validated as a
// scenario file is, so a combination Kafka refuses (enable.idempotence
// with acks=1) is an error naming the rule, whatever order they come in.
// A name in two sections must be qualified ("cluster.partitions"). A
// topic config of one of the workload's topics is topic.TOPIC.NAME
// (topic.input.cleanup.policy=compact; null removes it), validated as
// CreateTopics validates it.
func Set(s Scenario, settings ...Setting) (Scenario, error) {
	var doc map[string]json.RawMessage
	if err := json.Unmarshal(s.JSON(), &doc); err != nil {
		return Scenario{}, err
	}
	for _, kv := range settings {
		if topic, name, ok := topicKnob(kv.Name); ok {
			if err := setTopicConfig(doc, topic, name, kv.Value); err != nil {
				return Scenario{}, fmt.Errorf("scenario %q: %s: %w", s.Name, kv.Name, err)
			}
			continue
		}
		k, err := lookupKnob(kv.Name)
		if err != nil {
			return Scenario{}, fmt.Errorf("scenario %q: %w", s.Name, err)
		}
		v, err := k.parse(kv.Value)
		if err != nil {
			return Scenario{}, fmt.Errorf("scenario %q: %s %q: %w", s.Name, kv.Name, kv.Value, err)
		}
		if k.section == "" {
			doc[k.key] = v
			continue
		}
		obj := map[string]json.RawMessage{}
		if err := json.Unmarshal(doc[k.section], &obj); err != nil {
			return Scenario{}, err
		}
		obj[k.key] = v
		doc[k.section], _ = json.Marshal(obj)
	}
	b, _ := json.Marshal(doc)
	return Parse(b)
}

// topicKnob splits topic.TOPIC.NAME, a config of one of the workload's
// topics.
func topicKnob(name string) (topic, config string, ok bool) {
	rest, ok := strings.CutPrefix(name, "topic.")
	if !ok {
		return "", "", false
	}
	topic, config, ok = strings.Cut(rest, ".")
	return topic, config, ok && topic != "" && config != ""
}

// setTopicConfig sets (or, with null, removes) config name of topic in
// the document's cluster.topic.configs.
func setTopicConfig(doc map[string]json.RawMessage, topic, name, value string) error {
	cluster := map[string]json.RawMessage{}
	if err := json.Unmarshal(doc["cluster"], &cluster); err != nil {
		return err
	}
	configs := map[string]map[string]string{}
	if raw, ok := cluster["topic.configs"]; ok {
		if err := json.Unmarshal(raw, &configs); err != nil {
			return err
		}
	}
	if value == "null" {
		delete(configs[topic], name)
		if len(configs[topic]) == 0 {
			delete(configs, topic)
		}
	} else {
		if configs[topic] == nil {
			configs[topic] = map[string]string{}
		}
		configs[topic][name] = value
	}
	cluster["topic.configs"], _ = json.Marshal(configs)
	doc["cluster"], _ = json.Marshal(cluster)
	return nil
}

// knob is one key of the scenario file Set can change.
type knob struct {
	section, key string // section "" for a top-level key
	typ          reflect.Type
}

// knobs are every settable key, from the scenario file's own types: the
// four sections' fields and the top level's plain values (not the name,
// the description, the probes or the sections themselves).
var knobs = func() []knob {
	var out []knob
	add := func(section string, t reflect.Type) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if tag == "" || tag == "-" {
				continue
			}
			switch f.Type.Kind() {
			case reflect.String, reflect.Bool, reflect.Int, reflect.Int64, reflect.Float64, reflect.Pointer:
				if tag != "name" && tag != "description" {
					out = append(out, knob{section: section, key: tag, typ: f.Type})
				}
			}
		}
	}
	st := reflect.TypeFor[Scenario]()
	add("", st)
	for i := range st.NumField() {
		f := st.Field(i)
		if f.Type.Kind() == reflect.Struct {
			tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			add(tag, f.Type)
		}
	}
	return out
}()

// KnownKnob says whether Set accepts name (nil) or why not.
func KnownKnob(name string) error {
	if _, _, ok := topicKnob(name); ok {
		return nil // a topic config, validated with its value
	}
	_, err := lookupKnob(name)
	return err
}

// lookupKnob finds name, bare or qualified by its section.
func lookupKnob(name string) (knob, error) {
	var found []knob
	for _, k := range knobs {
		if k.key == name || (k.section != "" && k.section+"."+k.key == name) {
			found = append(found, k)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return knob{}, fmt.Errorf("unknown config %q (known: %s; and topic.TOPIC.NAME for a topic config)", name, strings.Join(Knobs(), ", "))
	}
	var qualified []string
	for _, k := range found {
		qualified = append(qualified, k.section+"."+k.key)
	}
	return knob{}, fmt.Errorf("config %q is ambiguous: say %s", name, strings.Join(qualified, " or "))
}

// parse turns value's text into JSON of the knob's type: a string stays
// text ("1" for acks), a bool or a number must parse, a pointer (unset:
// log.flush.interval.messages, transactional.id) also takes null.
func (k knob) parse(value string) (json.RawMessage, error) {
	t := k.typ
	if t.Kind() == reflect.Pointer {
		if value == "null" {
			return json.RawMessage("null"), nil
		}
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		b, _ := json.Marshal(value)
		return b, nil
	case reflect.Bool:
		if value != "true" && value != "false" {
			return nil, fmt.Errorf("want true or false")
		}
	case reflect.Int, reflect.Int64:
		if _, err := strconv.ParseInt(value, 10, 64); err != nil {
			return nil, fmt.Errorf("want an integer")
		}
	case reflect.Float64:
		if _, err := strconv.ParseFloat(value, 64); err != nil {
			return nil, fmt.Errorf("want a number")
		}
	default:
		return nil, fmt.Errorf("not settable from text")
	}
	return json.RawMessage(value), nil
}

// Knobs lists the names Set accepts, sorted, as a scenario file spells
// them (bare; qualify one that two sections share).
func Knobs() []string {
	seen := map[string]bool{}
	for _, k := range knobs {
		seen[k.key] = true
	}
	return slices.Sorted(maps.Keys(seen))
}
