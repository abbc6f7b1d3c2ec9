package faults

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
)

// Schedule is a fault schedule: actions in the order they fire (by At;
// actions at the same instant fire in slice order).
type Schedule []Action

// Sorted returns a copy in firing order: stably sorted by At.
func (s Schedule) Sorted() Schedule {
	c := slices.Clone(s)
	slices.SortStableFunc(c, func(a, b Action) int {
		switch {
		case a.At < b.At:
			return -1
		case a.At > b.At:
			return 1
		}
		return 0
	})
	return c
}

// String prints one action per line, as ParseSchedule reads them.
func (s Schedule) String() string {
	var b strings.Builder
	for _, a := range s {
		b.WriteString(a.String())
		b.WriteByte('\n')
	}
	return b.String()
}

// GoString prints the schedule as its lines, so that rapid's report of a
// failing case (which prints draws with %#v) reads as a schedule.
func (s Schedule) GoString() string { return "\n" + s.String() }

// ParseSchedule reads actions one per line, as String prints them. Blank
// lines and lines starting with '#' are skipped.
func ParseSchedule(text string) (Schedule, error) {
	var s Schedule
	for i, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		a, err := ParseAction(line)
		if err != nil {
			return nil, fmt.Errorf("faults: line %d: %s", i+1, bare(err))
		}
		s = append(s, a)
	}
	return s, s.Validate()
}

// Validate checks every action, and that tags are unique and each "$tag"
// refers to an action that fires before it.
func (s Schedule) Validate() error {
	defined := map[string]bool{}
	for _, a := range s.Sorted() {
		if err := a.Validate(); err != nil {
			return err
		}
		for _, t := range a.targets() {
			if t.Role == RoleTag && !defined[t.Name] {
				return fmt.Errorf("faults: %q refers to $%s before any action tagged %s", a.String(), t.Name, t.Name)
			}
		}
		if a.Tag != "" {
			if defined[a.Tag] {
				return fmt.Errorf("faults: tag %s used twice", a.Tag)
			}
			defined[a.Tag] = true
		}
	}
	return nil
}

// targets lists every target the action names.
func (a Action) targets() []Target {
	var ts []Target
	if !a.Target.IsZero() {
		ts = append(ts, a.Target)
	}
	if !a.Peer.IsZero() {
		ts = append(ts, a.Peer)
	}
	for _, g := range a.Groups {
		ts = append(ts, g...)
	}
	return ts
}

// Save writes s as a JSON array, one action per line, for a bug report or
// `kafkasim run --faults F`.
func (s Schedule) Save(w io.Writer) error {
	if err := s.Validate(); err != nil {
		return err
	}
	var b bytes.Buffer
	b.WriteString("[")
	for i, a := range s {
		line, err := json.Marshal(a)
		if err != nil {
			return err
		}
		if i > 0 {
			b.WriteString(",")
		}
		b.WriteString("\n  ")
		b.Write(line)
	}
	if len(s) > 0 {
		b.WriteString("\n")
	}
	b.WriteString("]\n")
	_, err := w.Write(b.Bytes())
	return err
}

// Load reads what Save writes (any JSON array of actions).
func Load(r io.Reader) (Schedule, error) {
	var s Schedule
	dec := json.NewDecoder(r)
	if err := dec.Decode(&s); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, fmt.Errorf("faults: trailing data after the schedule")
	}
	return s, nil
}

// UnmarshalJSON reads a JSON array of actions and validates the schedule.
func (s *Schedule) UnmarshalJSON(b []byte) error {
	if b = bytes.TrimSpace(b); len(b) > 0 && b[0] != '[' && !bytes.Equal(b, []byte("null")) {
		return fmt.Errorf("faults: a schedule is a JSON array of actions, got %.40s", b)
	}
	var as []Action
	if err := json.Unmarshal(b, &as); err != nil {
		return err
	}
	if err := Schedule(as).Validate(); err != nil {
		return err
	}
	if as == nil {
		as = Schedule{}
	}
	*s = as
	return nil
}

// bare is an error's text without this package's prefix, for wrapping it
// in a message that has one.
func bare(err error) string { return strings.TrimPrefix(err.Error(), "faults: ") }
