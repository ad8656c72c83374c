// Package redis is the cluster engine for any number of Keyward nodes: rate limiters,
// one-time tokens, counters, values and expiring sets kept in one Redis server
// (7.0 or later) through go-redis v9, so every node sees the same counts, nonces and
// sessions, and a bus on Redis Pub/Sub that reaches every node.
//
// What it owns: one go-redis client (its connection pool), once something subscribes one
// more connection for the bus with two goroutines (bus.go), all stopped by Close, and the
// keys and channels under Config.Prefix ("kw:" by default):
//
//	<prefix>rl:<key>    sorted set of allowed hits, expires with its window (allow.lua)
//	<prefix>tok:<key>   string, SET ... PX ttl, taken with GETDEL
//	<prefix>rev:<id>    string "1", SET ... PXAT until, tested with EXISTS
//	<prefix>cnt:<group> hash of counters, HINCRBY, read and deleted in one script
//	<prefix>val:<key>   string, SET ... PX ttl, touched with PEXPIRE ... XX
//	<prefix>set:<set>   sorted set member → expiry in microseconds of Redis's TIME
//	                    (sets.lua), expires with its latest member
//	<prefix>bus:<topic> Pub/Sub channel (not a key: channels ignore the database number,
//	                    so the prefix is what keeps deployments apart)
//
// The limiter and the expiring sets are Lua scripts, atomic in Redis, that read Redis's own
// TIME, so windows and member expiries are exact across nodes whatever their clocks say.
// Values expire by Redis's own key expiry.
//
// The bus: Publish is one PUBLISH. An engine subscribes its one Pub/Sub connection to a
// topic's channel while it has subscribers of the topic; Subscribe returns once Redis has
// confirmed (a PING sent after the SUBSCRIBE is answered), and callbacks run one after
// another on the engine's goroutine, in the order Redis delivered. go-redis reconnects that
// connection after a failure and subscribes again; a connection silent for 5s is pinged and
// replaced when the answer does not come within 3s. Messages published while a node's
// connection is down are lost to it, as the Bus contract allows, and so are messages beyond
// 10,000 waiting for slow callbacks.
//
// Failure: an error that comes from reaching Redis (dial, timeouts, closed connections,
// pool exhaustion, a closed engine, Redis loading or read-only) wraps
// cluster.ErrUnavailable, and short dial/read/write/pool timeouts with a single retry make
// it arrive within a second for a frozen Redis (two 400 ms read timeouts; immediately when the port refuses
// connections), so callers answer 503 instead of hanging. A caller's context deadline also
// bounds each command and counts as unavailability; the caller's own cancellation does not
// (the request is gone, Redis is not to blame). The client reconnects by itself once
// Redis is back.
//
// Servers: Config.URL names one server, or a Sentinel group (ParseURL: a master_name
// option), for which the client is go-redis's failover client: it asks the sentinels for
// the master, and after a failover dials the promoted replica; until then calls fail with
// ErrUnavailable like any outage. With an asynchronous replica the last writes before the
// master died may be lost (README, "Redis high availability").
//
// Limits: one Redis primary at a time is the shared state: while there is none, limited
// endpoints fail with 503 rather than run unlimited. Redis Cluster (hash slots) is not
// supported: the scripts and the bus assume one server. Redis persistence decides what a
// Redis restart loses; losing it all resets limits and ends live client sessions (core/client
// restores acknowledged ones from their durable copies; logouts are kept in storage). A
// retried limiter hit (after a reply was lost) may count twice, which only errs on the strict side. Each
// allowed hit costs one sorted-set member for the length of its window, so memory grows
// with limit × active keys.
package redis
