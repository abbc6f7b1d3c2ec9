// Package faults describes what goes wrong in a run: a fault schedule is
// data — timed actions (crash, power loss, restart, pause, partition, heal,
// clog, reset, clock skew, disk faults) on nodes or on roles such as "the
// leader of partition 0" — drawn from a seed by a nemesis or by rapid
// generators, saved and loaded as JSON, and shrunk to the smallest schedule
// that still fails. Faults stay within what their class promises, so a
// violation in a class a configuration claims to survive is a real bug.
package faults
