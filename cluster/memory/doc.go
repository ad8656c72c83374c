// Package memory is the embedded cluster engine: rate limiters, one-time tokens and
// revocations kept in this process's memory, under one mutex. It is the default for a
// single Keyward node and needs nothing outside the process.
//
// What it owns: three maps (limiter keys, tokens, revocations) and one janitor goroutine
// that drops expired entries every Config.SweepInterval, started by New and stopped by
// Close. Each limiter key keeps a ring of at most `limit` timestamps of allowed hits, grown
// on demand, so a key costs O(limit) memory however often it is hit; refused hits are
// never stored.
//
// Where it stops scaling:
//   - One node only. Two Keyward nodes with memory engines each count and remember on
//     their own, so a limit of 5 becomes 5 per node, a nonce can be used once per node and
//     a logout is known only to the node that saw it. Use cluster/redis for more than one
//     node.
//   - State is lost on restart: limiter counts reset, pending tokens vanish and revoked
//     JWT ids become valid again until they expire. Keep JWT lifetimes short.
//   - The number of keys is bounded only by traffic: every distinct key lives until its
//     window or ttl passes and the janitor runs. A sweep walks all entries under the lock,
//     which stays cheap up to a few hundred thousand live keys.
//
// Times are measured with Config.Now (time.Now by default, whose monotonic reading makes
// windows immune to wall-clock jumps); revocation deadlines are wall-clock times by
// contract.
package memory
