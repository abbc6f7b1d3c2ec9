package faults_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/faults"
	"github.com/stretchr/testify/require"
)

// everyKind uses every kind, every role and every optional field once.
const everyKind = `
+0s crash leader of orders/0 as $1
+500ms power-loss torn a follower of orders/1 as $2
+1s power-loss b3
+1.5s start $1
+2s start $2
+2s start b3
+2.5s restart the group coordinator of billing
+3s pause the transaction coordinator of tx-1 as $p
+3.5s resume $p
+4s partition [b1, the active controller] [a random broker]
+5s heal
+5s isolate a client
+6s cut b1 <-> b2
+6.5s cut-one-way leader of orders/0 -> the active controller
+7s heal
+7s clog b1 for 2s
+7s clog b1 <-> sink for 1.5s
+8s reset c1
+8s reset c1 <-> b2
+9s delay-frame EndTxn a client -> the transaction coordinator of tx-1 by 1.5s x1
+9s delay-frame any b1 -> b2 by 100ms x3
+10s skew controller by -3s
+10s skew b2 by +1m30s
+11s drift b3 by +500ppm
+11s drift b3 by -100000ppm
+12s fail-sync b1 x2
+12s fail-read b1 x1
+12s fail-read b1 x3 under "orders-0/00000.log"
+13s corrupt b2
+13s corrupt b2 under "orders-1/"
`

func TestEveryActionPrintsAsTheLineItWasParsedFrom(t *testing.T) {
	s := mustParse(t, everyKind)
	lines := strings.Split(strings.TrimSpace(everyKind), "\n")
	require.Equal(t, strings.Join(lines, "\n")+"\n", s.String())
	for _, a := range s {
		back, err := faults.ParseAction(a.String())
		require.NoError(t, err)
		require.Equal(t, a, back)
	}
}

func TestScheduleRoundTripsThroughJSON(t *testing.T) {
	s := mustParse(t, everyKind)
	var buf bytes.Buffer
	require.NoError(t, s.Save(&buf))
	back, err := faults.Load(&buf)
	require.NoError(t, err)
	require.Equal(t, s, back)

	// encoding/json works as well, and the saved file reads as one action
	// per line.
	b, err := json.Marshal(s)
	require.NoError(t, err)
	var back2 faults.Schedule
	require.NoError(t, json.Unmarshal(b, &back2))
	require.Equal(t, s, back2)
}

func TestSavedScheduleLooksLikeThis(t *testing.T) {
	s := mustParse(t, `
+2.5s crash leader of orders/0 as $1
+4s partition [b1, the active controller] [b2, b3]
+9s heal
+9.5s start $1
+11s delay-frame Produce a client -> leader of orders/0 by 1.5s x1
+12s power-loss torn b2
+15s start b2
`)
	var buf bytes.Buffer
	require.NoError(t, s.Save(&buf))
	require.Equal(t, `[
  {"at":"2.5s","kind":"crash","target":"leader of orders/0","tag":"1"},
  {"at":"4s","kind":"partition","groups":[["b1","the active controller"],["b2","b3"]]},
  {"at":"9s","kind":"heal"},
  {"at":"9.5s","kind":"start","target":"$1"},
  {"at":"11s","kind":"delay-frame","target":"a client","peer":"leader of orders/0","by":"1.5s","count":1,"frame":"Produce"},
  {"at":"12s","kind":"power-loss","target":"b2","torn":true},
  {"at":"15s","kind":"start","target":"b2"}
]
`, buf.String())
}

func TestGeneratedSchedulesRoundTripAsTextAndJSON(t *testing.T) {
	o := cluster()
	for seed := uint64(1); seed <= 200; seed++ {
		s := faults.Generate(env.NewRand(seed), faults.ClassAll, o)
		text, err := faults.ParseSchedule(s.String())
		require.NoError(t, err, "seed %d", seed)
		require.Equal(t, s, text, "seed %d", seed)
		var buf bytes.Buffer
		require.NoError(t, s.Save(&buf))
		loaded, err := faults.Load(&buf)
		require.NoError(t, err, "seed %d", seed)
		require.Equal(t, s, loaded, "seed %d", seed)
	}
}

func TestUnknownKindsRolesAndFieldsAreNamedInTheError(t *testing.T) {
	for _, c := range []struct{ json, want string }{
		{`[{"at":"1s","kind":"explode","target":"b1"}]`, `unknown fault kind "explode"`},
		{`[{"at":"1s","kind":"crash","target":"the janitor of b1"}]`, `unknown role "the janitor of b1"`},
		{`[{"at":"1s","kind":"crash","target":"b1","colour":"red"}]`, `unknown field "colour"`},
		{`[{"at":"1s","kind":"crash","target":"leader of orders"}]`, `want topic/partition`},
		{`[{"at":"soon","kind":"crash","target":"b1"}]`, `bad duration "soon"`},
		{`[{"kind":"crash","target":"b1"}]`, `no "at"`},
		{`[{"at":"1s","kind":"delay-frame","target":"b1","peer":"b2","by":"1s","count":1,"frame":"Produc"}]`, `unknown frame selector "Produc"`},
		{`[{"at":"1s","kind":"start","target":"$9"}]`, `refers to $9 before any action tagged 9`},
	} {
		_, err := faults.Load(strings.NewReader(c.json))
		require.ErrorContains(t, err, c.want, c.json)
	}
	for _, c := range []struct{ line, want string }{
		{"+1s explode b1", `unknown fault kind "explode"`},
		{"+1s crash the janitor", `unknown role "the janitor"`},
		{"1s crash b1", `must start with +time`},
		{"+1s clog b1", `clog needs "for <duration>"`},
		{"+1s heal b1", `heal takes nothing`},
		{"+1s cut b1 -> b2", `cut links nodes with "<->"`},
		{"+1s skew b1 by 0s", `zero skew`},
		{"+1s drift b1 by +200000ppm", `bad drift`},
		{"+1s fail-sync b1", `needs a count like x1`},
		{"+1s crash b1 as $1\n+2s crash b2 as $1", `tag 1 used twice`},
	} {
		_, err := faults.ParseSchedule(c.line)
		require.ErrorContains(t, err, c.want, c.line)
	}
}

func TestTargetsParseFromTheirPhrases(t *testing.T) {
	for _, c := range []struct {
		phrase string
		want   faults.Target
	}{
		{"b1", faults.Node("b1")},
		{"$crashed", faults.Tagged("crashed")},
		{"leader of orders/12", faults.Leader("orders", 12)},
		{"leader of my.topic-v2/0", faults.Leader("my.topic-v2", 0)},
		{"a follower of orders/0", faults.Follower("orders", 0)},
		{"the active controller", faults.Controller()},
		{"a controller", faults.AnyController()},
		{"the group coordinator of billing", faults.GroupCoordinator("billing")},
		{"the transaction coordinator of tx-1", faults.TxnCoordinator("tx-1")},
		{"a random broker", faults.RandomBroker()},
		{"a client", faults.AnyClient()},
	} {
		got, err := faults.ParseTarget(c.phrase)
		require.NoError(t, err, c.phrase)
		require.Equal(t, c.want, got)
		require.Equal(t, c.phrase, got.String())
	}
	// Schedules saved before the controller became a quorum say "the controller".
	got, err := faults.ParseTarget("the controller")
	require.NoError(t, err)
	require.Equal(t, faults.Controller(), got)
}

func TestActionsFireInTimeOrderWhateverTheirOrderInTheFile(t *testing.T) {
	s := faults.Schedule{
		{At: 2 * time.Second, Kind: faults.KindStart, Target: faults.Tagged("1")},
		{At: time.Second, Kind: faults.KindCrash, Target: faults.Leader("orders", 0), Tag: "1"},
	}
	require.NoError(t, s.Validate(), "the tag is defined before it is used, in time")
	require.Equal(t, "+1s crash leader of orders/0 as $1\n+2s start $1\n", s.Sorted().String())
}
