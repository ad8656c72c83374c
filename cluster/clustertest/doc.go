// Package clustertest is the conformance suite every cluster engine passes: the written
// contract of package cluster, run unchanged against cluster/memory and cluster/redis. Run
// takes fresh engines; RunShared takes pairs that share a backend, as two nodes do, for the
// bus across nodes and state seen from both.
//
// It uses real time, never an injected clock, because a Redis engine reads Redis's own
// clock. Timing is asserted only as order of events, so a loaded machine cannot make it
// flake: "refused" is asserted only when the measured time since the counted hits is still
// below the window (otherwise the check is skipped with a log line), and "allowed again"
// only after sleeping past the window plus a margin, which a slow machine only lengthens.
// Bus deliveries are awaited up to a generous deadline, and "not delivered" is asserted
// after a quiet period in which a wrong delivery would have arrived.
package clustertest
