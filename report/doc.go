// Package report renders what a sweep found as one self-contained HTML
// page: `kafkasim explore --html F` (the configuration x fault-class grid)
// and `kafkasim matrix --html F` (the catalogue) write it, and `kafkasim
// merge --html F` writes the same page from shards.
//
// The contract:
//
//   - A Page is a table — rows (configurations, or scenarios), columns
//     (fault classes, or the matrix's fields) — whose cells are coloured by
//     Tone, the guarantee a cell observed, and link to a Detail: the seeds,
//     the facts, each broken guarantee's first failing seed with the
//     command that replays it, the probes reached, and the Timeline of the
//     first failure.
//   - A Timeline is the failing run's history as lanes, one per process,
//     an operation a bar from its call to its return coloured by outcome;
//     the operations an anomaly names as its witnesses outlined and listed;
//     the faults the nemesis fired as marks across every lane.
//   - The page is one file: its style inline, no fetched resource, so it
//     opens from a CI artifact as it is; no script, but a run's page
//     (RunPage) sets its location to the first witness when opened
//     without one. Links are fragment links (#d-3, #op-17, #fault-2); what
//     a link opens is highlighted with CSS :target.
//   - A RunPage is one failing run (`kafkasim run --html F`): a header
//     saying what is wrong — scenario, seed, verdict, each anomaly's
//     witnesses linked to their operations, the faults fired linked to
//     their marks — above the run's timeline at a readable scale.
//   - Rendering is deterministic: the same Page gives the same bytes.
package report
