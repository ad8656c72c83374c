// Package redis is the cluster engine for any number of Keyward nodes: rate limiters,
// one-time tokens, counters, values and expiring sets kept in Redis (7.0 or later: one
// server, a Sentinel group or a Redis Cluster) through go-redis v9, so every node sees the
// same counts, nonces and sessions, and a bus on Redis Pub/Sub that reaches every node.
//
// What it owns: one go-redis client (its connection pools), once something subscribes one
// more connection for the bus (on a Redis Cluster one per bus bucket in use) with a
// goroutine each and one fan-out goroutine (bus.go), all stopped by Close, and the keys
// and channels under Config.Prefix ("kw:" by default):
//
//	<prefix>rl:<key>    sorted set of allowed hits, expires with its window (allow.lua)
//	<prefix>tok:<key>   string, SET ... PX ttl, taken with GETDEL
//	<prefix>rev:<id>    string "1", SET ... PXAT until, tested with EXISTS
//	<prefix>cnt:<group> hash of counters, HINCRBY, read and deleted in one script
//	<prefix>val:<key>   string, SET ... PX ttl, touched with PEXPIRE ... XX
//	<prefix>set:<set>   sorted set member → expiry in microseconds of Redis's TIME
//	                    (sets.lua), expires with its latest member
//	<prefix>prs:{<app>}:live   sorted set socket → expiry (µs of TIME): the app's live
//	                    client sockets (presence.lua); with :owner (hash socket → user),
//	                    :user (hash user → socket) and :info (hash socket → what the
//	                    session list shows), one hash slot per app, all expiring with the
//	                    latest socket. Every Presence call is one script run: a renewal of
//	                    all of an app's sockets is one round trip and one command sent
//	                    (TestPresenceRenewalRoundTrips, BenchmarkPresenceRenewal)
//	<prefix>bus:<topic> Pub/Sub channel (not a key: channels ignore the database number,
//	                    so the prefix is what keeps deployments apart)
//	<prefix>bus:{N}:<topic>  on a Redis Cluster: sharded Pub/Sub channel (Redis 7), N
//	                    (0-15) a hash of the topic; N is 0 for classic Pub/Sub
//
// The limiter and the expiring sets are Lua scripts, atomic in Redis, that read Redis's own
// TIME, so windows and member expiries are exact across nodes whatever their clocks say.
// Values expire by Redis's own key expiry.
//
// The bus: Publish is one PUBLISH (SPUBLISH on a Redis Cluster, below). An engine subscribes its one Pub/Sub connection to a
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
// cluster.ErrUnavailable. Short read and write timeouts (300 ms) bound each attempt, and a
// hook bounds each command or pipeline as a whole at 400 ms (Config.CommandTimeout: the
// wait for a pooled connection, the single retry and a new connection's handshake
// included), so a request that meets a frozen Redis twice still answers 503 within a
// second, and at once when the port refuses connections, instead of hanging. A caller's context deadline also
// bounds each command and counts as unavailability; the caller's own cancellation does not
// (the request is gone, Redis is not to blame). The client reconnects by itself once
// Redis is back.
//
// Servers: Config.URL names one server, a Sentinel group (ParseURL: a master_name option)
// or a Redis Cluster (a cluster=true option). For a group the client is go-redis's failover
// client: it asks the sentinels for the master, and after a failover dials the promoted
// replica; until then calls fail with ErrUnavailable like any outage. With an asynchronous
// replica the last writes before the master died may be lost (README, "Redis high
// availability").
//
// Redis Cluster. The client is go-redis's cluster client: it learns the slot map from the
// seed nodes, sends each command to the master of its key's hash slot, follows MOVED and
// ASK. Calls on the slots of a master that died fail with ErrUnavailable, CLUSTERDOWN
// included, until its replica is promoted; every such failure has the client fetch the
// slot map again (go-redis alone would do so only every minute), so the engine moves to
// the promoted replica within moments of the promotion. Redis runs a
// script or a multi-key command only when all its keys hash to one slot (CROSSSLOT
// otherwise) and has no database but 0. The hash-slot rules, and the choice of hash tags:
//
//   - Every script (allow.lua, sets.lua, the take and get scripts) takes exactly one key,
//     KEYS[1], so it is in one slot by construction; no MULTI/EXEC is used.
//   - The one multi-key read, GetValues (the sessions of a node's sockets of an app,
//     whose keys are session tokens of many users), is an MGET on one server and on a
//     cluster a pipeline of GETs, which go-redis splits by master and sends in parallel;
//     PutLeases is a pipeline too (values and set adds of many keys).
//   - So no key family needs a hash tag, and none has one: keys keep the names above, each
//     in the slot of its own name, which spreads one big app's limiter windows, sessions
//     and presence over every master instead of making one master its hot spot. A future
//     script or multi-key command over keys of one app must put them in one slot with a
//     hash tag in the caller's key, per app: {a:<appId>} (per account {acc:<accountId>}),
//     and the cluster conformance test (TestConformanceRedisCluster) fails with CROSSSLOT
//     until it does. A Config.Prefix with braces would put every key in one slot: don't.
//   - The bus alone uses hash tags: a sharded subscription is made on the node serving
//     the channel's slot and one SSUBSCRIBE names channels of one slot, so the topics are
//     spread over 16 tags, <prefix>bus:{N}:<topic> with N = FNV-1a(topic) mod 16, and a
//     node holds at most 16 subscriber connections whatever the number of per-app topics.
//
// The bus on a Redis Cluster is sharded Pub/Sub (SPUBLISH/SSUBSCRIBE) when the servers
// have it (Redis 7; the engine asks with COMMAND INFO at New): a message stays within its
// channel's shard instead of being broadcast over the cluster bus to every node as a
// classic PUBLISH is. On older servers it is classic Pub/Sub, which works cluster-wide,
// with every channel in the slot of the tag {0} (<prefix>bus:{0}:<topic>): PUBLISH and
// SUBSCRIBE both go to that slot's master, because messages sent through different nodes
// can overtake each other, or reach a subscription made after they were sent. When a
// slot's master changes, the old one ends the sharded subscriptions on it (or the
// connection dies): the engine has the slot map reloaded and subscribes again on the new
// master; messages in between are lost, as the Bus contract allows.
//
// Limits: one Redis primary per slot at a time is the shared state: while there is none,
// limited endpoints fail with 503 rather than run unlimited. Redis persistence decides what
// a Redis restart loses; losing it all resets limits and ends live client sessions
// (core/client restores acknowledged ones from their durable copies; logouts are kept in
// storage). Moving a deployment to another Redis (one server to a Redis Cluster, say) is
// the same as losing it all, and nothing more: no key changed its name for the cluster
// support (only the sharded channels are new, and channels hold nothing), so nodes of
// the old and new versions share one Redis during a rolling upgrade; what Redis holds is
// ephemeral or rebuilt (nonces and limiter windows start afresh, presence leases and
// floating seats are renewed by the nodes and heartbeats that hold them, client sessions
// come back from their durable copies on first use, and counts of API calls not yet
// written to storage are lost). A
// retried limiter hit (after a reply was lost) may count twice, which only errs on the strict side. Each
// allowed hit costs one sorted-set member for the length of its window, so memory grows
// with limit × active keys.
package redis
