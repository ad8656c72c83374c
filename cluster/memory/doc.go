// Package memory is the embedded cluster engine: rate limiters, one-time tokens,
// counters, values and expiring sets kept in this process's memory under one
// mutex, and a bus that delivers within the process. It is the default for a single
// Keyward node and needs nothing outside the process.
//
// What it owns: a map per kind of state, one janitor goroutine that drops expired entries
// every Config.SweepInterval, and one bus goroutine that calls subscribers; New starts both
// and Close stops both (waiting for a subscriber callback in progress, so none starts after
// Close returns). Each limiter key keeps a ring of at most `limit` timestamps of allowed
// hits, grown on demand, so a key costs O(limit) memory however often it is hit; refused
// hits are never stored. Every call on an expiring set first drops that set's expired
// members, so a set never holds more than `limit` members after an AddMember with a limit.
//
// Presence keeps a map of live sockets and a map of user → socket per app, pruned of
// expired sockets on every call and by the janitor.
//
// The bus queues each message with the subscribers of its topic at that moment and calls
// them one after another on the bus goroutine, in publish order. When callbacks are so slow
// that 10,000 messages wait, newer messages are dropped (delivery is at most once by
// contract).
//
// Where it stops scaling:
//   - One node only. Two Keyward nodes with memory engines each count and remember on
//     their own, so a limit of 5 becomes 5 per node, a nonce can be used once per node and
//     a per-user socket limit holds per node. Use cluster/redis for more than one
//     node.
//   - State is lost on restart: limiter counts reset, pending tokens vanish, and client
//     sessions (values) are gone (core/client restores them from its durable copies;
//     logged-out JWTs are kept in storage, not here).
//   - The number of keys is bounded only by traffic: every distinct key lives until its
//     window or ttl passes and the janitor runs. A sweep walks all entries under the lock,
//     which stays cheap up to a few hundred thousand live keys.
//
// Times are measured with Config.Now (time.Now by default, whose monotonic reading makes
// windows immune to wall-clock jumps).
package memory
