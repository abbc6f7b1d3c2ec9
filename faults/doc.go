// Package faults describes what goes wrong in a run: a fault schedule is
// data — timed actions (crash, power loss, restart, pause, partition, heal,
// clog, reset, delayed frames, clock skew, disk faults) on nodes or on roles
// such as "the leader of orders/0" — drawn from a seed by a nemesis or by
// rapid generators, saved and loaded as JSON, and shrunk to the smallest
// schedule that still fails. Faults stay within what their class promises,
// so a violation in a class a configuration claims to survive is a real bug.
//
// The contract:
//
//   - A Schedule is a list of Actions, each at an offset from the start of
//     the workload. Every action prints as one line and parses back
//     (Action.String, ParseAction), and a schedule saves as JSON
//     (Schedule.Save, Load, or encoding/json). Unknown kinds, roles and
//     fields are errors that name them.
//   - Targets are node names or roles resolved when the action fires, by a
//     Resolver the scenario runner implements over the live cluster; this
//     package never imports the broker. A tag ("as $1") names the node an
//     action hit, so the start that undoes a crash of "the leader" boots the
//     node that was crashed, not whoever leads now. The controller roles:
//     "the active controller" (the metadata quorum's leader when the action
//     fires; "the controller" parses as it too) and "a controller" (any
//     voter); the nemesis takes at most one controller down per episode, a
//     minority of a quorum of three or five.
//   - An action may be a trigger: "when P [on S] within W:" arms it at its
//     time, and it fires right after the event in which a process hit the
//     coverage probe P (package probe) about subject S, no later than W; a
//     probe not hit in time skips it (and what undoes it). "the probed
//     node" names the node that hit the probe. Triggers are data like any
//     action: printed, parsed, saved, shrunk.
//   - Install puts a schedule on a sim.World (w.At); each action, applied or
//     skipped (a role nobody plays, a probe never hit), writes a trace note
//     and is recorded as Fired for the history's fault annotations. HealAll
//     returns the world to health for the drain phase.
//   - Generate (a seeded nemesis) and Gen (rapid, drawn as data so failures
//     shrink) make schedules of a Class — none, crash, network, power,
//     correlated-power, disk, clock, all, or a union — that keep the
//     class's promises; Class.Check states them and checks any schedule.
//     Both pace their episodes as Jepsen and TigerBeetle do: one at a time,
//     each undone before the next begins, a quiet interval between, so the
//     cluster recovers and never has more down at once than the class
//     allows. Generate is swarm-random in which faults a run enables and how
//     much it weighs each; targeted faults wait for the probes of a trigger
//     menu the scenario offers (Options.Triggers), aimed where each bites.
//   - Shrink minimizes a failing schedule and workload size by delta
//     debugging, removing each fault together with what undoes it.
//
// A schedule as it prints:
//
//	+2.5s crash leader of orders/0 as $1
//	+4s partition [n1, the active controller] [n2, n3]
//	+9s heal
//	+9.5s start $1
//	+11s delay-frame EndTxn a client -> the transaction coordinator of tx-1 by 1.5s x1
//	+14s when produce-answered on orders/0 within 2s: partition [the probed node, producer-0]
//	+25s heal
//
// Everything is deterministic: randomness comes only from env.Rand streams
// or rapid, never from math/rand or the wall clock.
package faults
