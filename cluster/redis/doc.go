// Package redis is the cluster engine for any number of Keyward nodes: rate limiters,
// one-time tokens and revocations kept in one Redis server (7.0 or later) through
// go-redis v9, so every node sees the same counts, nonces and logouts.
//
// What it owns: one go-redis client (its connection pool) and the keys under
// Config.Prefix ("kw:" by default):
//
//	<prefix>rl:<key>   sorted set of allowed hits, expires with its window (allow.lua)
//	<prefix>tok:<key>  string, SET ... PX ttl, taken with GETDEL
//	<prefix>rev:<id>   string "1", SET ... PXAT until, tested with EXISTS
//
// The limiter is one Lua script per hit, atomic in Redis, that reads Redis's own TIME, so
// the window is exact across nodes whatever their clocks say. Revocation deadlines are
// absolute times compared with Redis's clock; keep node clocks in sync (NTP) as JWT expiry
// already requires.
//
// Failure: an error that comes from reaching Redis (dial, timeouts, closed connections,
// pool exhaustion, a closed engine, Redis loading or read-only) wraps
// cluster.ErrUnavailable, and short dial/read/write/pool timeouts with a single retry make
// it arrive within a few seconds at worst (immediately when the port refuses
// connections), so callers answer 503 instead of hanging. A caller's context deadline also
// bounds each command and counts as unavailability; the caller's own cancellation does not
// (the request is gone, Redis is not to blame). The client reconnects by itself once
// Redis is back.
//
// Limits: one Redis primary is the shared state and a single point of failure: while it is
// down, limited endpoints fail with 503 rather than run unlimited. Redis Cluster and
// Sentinel are not supported (one client, one address). Redis persistence decides what a
// Redis restart loses; losing it all resets limits and forgets logouts. A retried limiter
// hit (after a reply was lost) may count twice, which only errs on the strict side. Each
// allowed hit costs one sorted-set member for the length of its window, so memory grows
// with limit × active keys.
package redis
