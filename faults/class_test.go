package faults_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kafkasim/kafkasim/env"
	"github.com/kafkasim/kafkasim/faults"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"
)

func TestClassNamesParseAsUnions(t *testing.T) {
	for _, c := range []struct {
		in   string
		want faults.Class
		out  string
	}{
		{"none", faults.ClassNone, "none"},
		{"crash", faults.ClassCrash, "crash"},
		{"crash,network", faults.ClassCrash | faults.ClassNetwork, "crash,network"},
		{" network , crash ", faults.ClassCrash | faults.ClassNetwork, "crash,network"},
		{"correlated-power,disk,clock", faults.ClassCorrelatedPower | faults.ClassDisk | faults.ClassClock, "correlated-power,disk,clock"},
		{"all", faults.ClassAll, "all"},
		{"none,power", faults.ClassPower, "power"},
	} {
		got, err := faults.ParseClass(c.in)
		require.NoError(t, err, c.in)
		require.Equal(t, c.want, got, c.in)
		require.Equal(t, c.out, got.String())
	}
	_, err := faults.ParseClass("crash,netwrok,fire")
	require.EqualError(t, err, `faults: unknown fault class "netwrok", "fire" in "crash,netwrok,fire" `+
		`(known: none, crash, network, power, correlated-power, disk, clock, all)`)
	_, err = faults.ParseClass("")
	require.ErrorContains(t, err, `unknown fault class ""`)
}

var classes = []string{"none", "crash", "network", "power", "correlated-power", "disk", "clock", "crash,network", "power,disk", "all"}

// features is what a schedule uses: its kinds, and whether its power losses
// tear writes.
func features(s faults.Schedule) string {
	fs := kindsOf(s)
	for _, a := range s {
		if a.Kind == faults.KindPowerLoss {
			f := map[bool]string{true: "torn", false: "untorn"}[a.Torn]
			if !slices.Contains(fs, f) {
				fs = append(fs, f)
			}
		}
	}
	slices.Sort(fs)
	return strings.Join(fs, " ")
}

// kindsOf is the set of kinds a schedule uses, as a sorted list.
func kindsOf(s faults.Schedule) []string {
	var ks []string
	for _, a := range s {
		if !slices.Contains(ks, a.Kind.String()) {
			ks = append(ks, a.Kind.String())
		}
	}
	slices.Sort(ks)
	return ks
}

// mostPoweredOff is the largest number of power losses open at once.
func mostPoweredOff(s faults.Schedule) int {
	open, most := map[string]bool{}, 0
	node := func(a faults.Action) string {
		if a.Target.Role == faults.RoleTag {
			for _, b := range s {
				if b.Tag == a.Target.Name {
					return b.Target.String()
				}
			}
		}
		return a.Target.String()
	}
	for _, a := range s {
		switch a.Kind {
		case faults.KindPowerLoss:
			open[node(a)] = true
		case faults.KindStart:
			delete(open, node(a))
		}
		most = max(most, len(open))
	}
	return most
}

func TestEachClassKeepsItsPromiseOverManySeeds(t *testing.T) {
	o := cluster()
	for _, name := range classes {
		c := faults.MustParseClass(name)
		used := map[string]int{}
		subsets := map[string]bool{}
		mostOff, actions := 0, 0
		for seed := uint64(1); seed <= 300; seed++ {
			s := faults.Generate(env.NewRand(seed), c, o)
			require.NoError(t, c.Check(s, o), "class %s seed %d:\n%s", name, seed, s)
			for _, k := range kindsOf(s) {
				used[k]++
			}
			subsets[features(s)] = true
			mostOff = max(mostOff, mostPoweredOff(s))
			actions += len(s)
		}
		var kinds []string
		for k := range used {
			kinds = append(kinds, k)
		}
		slices.Sort(kinds)
		t.Logf("%-28s %5.1f actions/run, %3d feature subsets, kinds %v", name, float64(actions)/300, len(subsets), kinds)
		switch name {
		case "none":
			require.Zero(t, actions, "none is empty")
		case "crash":
			require.Equal(t, []string{"crash", "restart", "start"}, kinds)
		case "network":
			require.Equal(t, []string{"clog", "cut", "cut-one-way", "delay-frame", "heal", "isolate", "partition", "reset"}, kinds)
		case "power":
			require.Equal(t, []string{"power-loss", "start"}, kinds)
			require.Equal(t, 1, mostOff, "one node off at a time")
		case "correlated-power":
			require.Equal(t, []string{"power-loss", "start"}, kinds)
			require.Equal(t, len(o.Brokers), mostOff, "sometimes every broker is off at once")
		case "disk":
			require.Equal(t, []string{"corrupt", "fail-read", "fail-sync", "start"}, kinds)
		case "clock":
			require.Equal(t, []string{"drift", "pause", "resume", "skew"}, kinds)
		}
		if name != "none" {
			require.Greater(t, len(subsets), 2, "swarm: runs of class %s differ in which faults they use", name)
		}
	}
}

func TestDiskFaultsStayOnAMinorityOfBrokers(t *testing.T) {
	o := cluster()
	o.Brokers = []string{"b1", "b2", "b3", "b4", "b5"}
	seen := map[string]bool{}
	for seed := uint64(1); seed <= 300; seed++ {
		s := faults.Generate(env.NewRand(seed), faults.ClassDisk, o)
		hit := map[string]bool{}
		for _, a := range s {
			if a.Kind != faults.KindStart {
				hit[a.Target.Name] = true
				seen[a.Target.Name] = true
			}
		}
		require.LessOrEqual(t, len(hit), 2, "seed %d: disk faults on %v", seed, hit)
	}
	require.Len(t, seen, 5, "over many runs, every broker's disk takes its turn")

	o.DiskFaultyMax = 1
	for seed := uint64(1); seed <= 100; seed++ {
		s := faults.Generate(env.NewRand(seed), faults.ClassDisk, o)
		require.NoError(t, faults.ClassDisk.Check(s, o))
	}
	o.DiskFaultyMax = -1
	require.Empty(t, faults.Generate(env.NewRand(1), faults.ClassDisk, o), "no brokers may be faulted: nothing to do")
}

func TestTheSameSeedGivesTheSameSchedule(t *testing.T) {
	o := cluster()
	a := faults.Generate(env.NewRand(42), faults.ClassAll, o)
	b := faults.Generate(env.NewRand(42), faults.ClassAll, o)
	require.Equal(t, a.String(), b.String())
	c := faults.Generate(env.NewRand(43), faults.ClassAll, o)
	require.NotEqual(t, a.String(), c.String())
}

func TestRateScaleMakesFaultsDenser(t *testing.T) {
	o := cluster()
	count := func(scale float64) int {
		o.RateScale = scale
		n := 0
		for seed := uint64(1); seed <= 50; seed++ {
			n += len(faults.Generate(env.NewRand(seed), faults.ClassCrash|faults.ClassClock, o))
		}
		return n
	}
	slow, normal, fast := count(0.25), count(1), count(4)
	require.Less(t, slow, normal)
	require.Less(t, normal, fast)
}

func TestEveryFaultIsUndoneBeforeTheWorkloadEnds(t *testing.T) {
	o := cluster()
	o.Duration = 7 * time.Second // shorter than many faults last
	for seed := uint64(1); seed <= 300; seed++ {
		s := faults.Generate(env.NewRand(seed), faults.ClassAll, o)
		require.NoError(t, faults.ClassAll.Check(s, o), "seed %d:\n%s", seed, s)
		for _, a := range s {
			require.Less(t, a.At, o.Duration)
		}
	}
}

func TestCheckNamesTheBrokenPromise(t *testing.T) {
	o := cluster()
	for _, c := range []struct {
		class, schedule, want string
	}{
		{"crash", "+1s crash b1", `"+1s crash b1" is never undone`},
		{"crash", "+1s crash b1\n+61s start b1", `fires after the workload ends`},
		{"network", "+1s partition [b1]", `"+1s partition [b1]" is never undone`},
		{"network", "+59s clog b1 for 2s", `outlasts the workload`},
		{"crash", "+1s partition [b1]\n+2s heal", `is not in fault class crash`},
		{"power", "+1s power-loss b1\n+2s power-loss b2\n+3s start b1\n+3s start b2", `makes 2 nodes lose power at once; class power allows 1`},
		{"power", "+1s power-loss b1\n+2s start b1\n+3s power-loss b2\n+4s start b2", `comes 1s after the last power loss was undone; class power wants 5s`},
		{"disk", "+1s corrupt b1\n+2s corrupt b2", `disk faults on 2 brokers (b1, b2); class disk allows 1`},
		{"disk", "+1s corrupt leader of orders/0", `disk faults must name a broker`},
		{"clock", "+1s pause leader of orders/0 as $1\n+2s resume b1", `"+1s pause leader of orders/0 as $1" is never undone`},
	} {
		err := faults.MustParseClass(c.class).Check(mustParse(t, c.schedule), o)
		require.ErrorContains(t, err, c.want, c.schedule)
	}
	ok := mustParse(t, "+1s power-loss b1\n+1s power-loss b2\n+3s start b1\n+3s start b2")
	require.NoError(t, faults.ClassCorrelatedPower.Check(ok, o), "correlated power loss may take several")
	healed := mustParse(t, "+1s crash leader of orders/0 as $1\n+2s start $1\n+3s isolate b1\n+4s cut b2 <-> b3\n+5s heal")
	require.NoError(t, faults.MustParseClass("crash,network").Check(healed, o), "one heal lifts every cut before it")
}

func TestRapidSchedulesKeepTheirClassPromise(t *testing.T) {
	o := cluster()
	for _, name := range classes {
		c := faults.MustParseClass(name)
		t.Run(name, rapid.MakeCheck(func(t *rapid.T) {
			s := faults.Gen(c, o).Draw(t, "schedule")
			if err := c.Check(s, o); err != nil {
				t.Fatalf("%v\n%s", err, s)
			}
			back, err := faults.ParseSchedule(s.String())
			if err != nil || back.String() != s.String() {
				t.Fatalf("does not parse back: %v\n%s", err, s)
			}
		}))
	}
}

// The disk class reaches the controllers too when a quorum can spare one:
// with three, disk faults hit controller-0 now and then (its metadata log,
// snapshots and quorum state) and never two controllers; a lone controller
// is never hit, and a schedule that faults it, or a majority of three, is
// refused.
func TestDiskFaultsHitAMinorityOfTheControllersOnly(t *testing.T) {
	o := cluster()
	o.Controllers = []string{"controller-0", "controller-1", "controller-2"}
	hitController := 0
	for seed := uint64(1); seed <= 200; seed++ {
		s := faults.Generate(env.NewRand(seed), faults.ClassDisk, o)
		require.NoError(t, faults.ClassDisk.Check(s, o), "seed %d", seed)
		for _, a := range s {
			if a.Kind != faults.KindStart && slices.Contains(o.Controllers, a.Target.Name) {
				require.Equal(t, "controller-0", a.Target.Name, "seed %d", seed)
				hitController++
			}
		}
	}
	require.Positive(t, hitController, "some disk fault of 200 runs hits a controller")

	two, err := faults.ParseSchedule("+1s corrupt controller-0\n+2s corrupt controller-1")
	require.NoError(t, err)
	require.ErrorContains(t, faults.ClassDisk.Check(two, o), "disk faults on 2 controllers")
	o.Controllers = []string{"controller"}
	one, err := faults.ParseSchedule("+1s corrupt controller")
	require.NoError(t, err)
	require.ErrorContains(t, faults.ClassDisk.Check(one, o), "disk faults on 1 controllers")
	for seed := uint64(1); seed <= 100; seed++ {
		for _, a := range faults.Generate(env.NewRand(seed), faults.ClassDisk, o) {
			require.NotEqual(t, "controller", a.Target.Name, "seed %d: a lone controller's disk is never faulted", seed)
		}
	}
}
