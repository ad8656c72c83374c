// Package cluster owns cross-node coordination behind small interfaces: rate limiters,
// one-time tokens (nonces), connection counters, expiring sets (leases), values (client
// sessions), batches (many keys in one round trip), the presence of client sockets per app
// (Presence: admission under the app's limit and the one-socket-per-user rule in one atomic
// step, renewals in one call per app) and the message bus. It holds no business rules:
// callers choose keys, limits and lifetimes.
//
// Engines: cluster/memory (one node, the embedded default) and cluster/redis (go-redis v9,
// any number of nodes). One conformance suite, cluster/clustertest, runs unchanged against
// both and is the written contract. The in-process half of the bus (calling a node's
// subscribers in order, with a bounded queue) is one implementation both engines share,
// cluster/internal/fanout. Every method that talks to a remote engine answers an
// error wrapping ErrUnavailable when that engine cannot be reached, promptly (the Redis
// engine uses short dial/read/write timeouts) so requests fail with 503 instead of hanging.
package cluster
