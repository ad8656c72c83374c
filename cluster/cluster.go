package cluster

import (
	"context"
	"errors"
	"time"
)

// ErrUnavailable wraps errors caused by the engine being unreachable.
var ErrUnavailable = errors.New("cluster: unavailable")

// Decision is a rate limiter's answer for one hit.
type Decision struct {
	Allowed bool
	// Remaining is how many more hits the window allows after this one.
	Remaining int
	// RetryAfter is, for a refused hit, how long until the oldest counted hit leaves the
	// window and one more hit would be allowed.
	RetryAfter time.Duration
}

// RateLimiter counts hits per key in a sliding window. The count is exact: with limit N
// and window W, a hit is allowed if and only if fewer than N allowed hits of the same key
// happened in the W before it. Refused hits are not counted. Keys are any strings.
type RateLimiter interface {
	Allow(ctx context.Context, key string, limit int, window time.Duration) (Decision, error)
}

// OneTimeTokens stores short-lived values that can be taken once (nonces, pending codes).
type OneTimeTokens interface {
	// PutToken stores value under key for ttl, replacing what was there.
	PutToken(ctx context.Context, key, value string, ttl time.Duration) error
	// TakeToken atomically reads and deletes key. ok is false when the key is absent or
	// expired. Of concurrent takers of one key exactly one gets ok.
	TakeToken(ctx context.Context, key string) (value string, ok bool, err error)
}

// Counters are shared integer counters grouped under a name, for figures bumped on every
// request and written to storage in batches (the monthly API calls of an account).
type Counters interface {
	// AddCount adds delta to field of group and answers the field's new value.
	AddCount(ctx context.Context, group, field string, delta int64) (int64, error)
	// TakeCounts atomically reads and empties group, answering field → value. A concurrent
	// AddCount lands either in this take or in the group for the next one: none is lost or
	// taken twice.
	TakeCounts(ctx context.Context, group string) (map[string]int64, error)
}

// Values stores short-lived byte values under keys, with an expiry that can be pushed back
// (client sessions: the value is the session, the ttl its idle timeout). Touching costs one
// engine operation and no storage write.
type Values interface {
	// SetValue stores value under key for ttl, replacing what was there.
	SetValue(ctx context.Context, key string, value []byte, ttl time.Duration) error
	// GetValue answers the value and how long it has left; ok is false when the key is
	// absent or expired.
	GetValue(ctx context.Context, key string) (value []byte, ttl time.Duration, ok bool, err error)
	// TouchValue sets the key's remaining time to ttl if it exists; ok is false otherwise
	// (an expired key is not revived).
	TouchValue(ctx context.Context, key string, ttl time.Duration) (ok bool, err error)
	// DeleteValue removes the key; ok says whether it existed (and was not expired).
	DeleteValue(ctx context.Context, key string) (ok bool, err error)
}

// ExpiringSets are sets of strings whose members each expire on their own (open nonces of a
// session, the sessions of a user or an app, presence leases of connections). A member is
// live from AddMember until its ttl runs out; expired members are never answered.
type ExpiringSets interface {
	// AddMember puts member into set for ttl (a member already there gets the new ttl).
	// When limit > 0 and the set then holds more than limit live members, those that
	// expire soonest are removed until limit are left (the member just added is kept, as
	// it expires last for a fixed ttl). The set is forgotten once every member has expired.
	AddMember(ctx context.Context, set, member string, ttl time.Duration, limit int) error
	// TakeMember atomically removes member and reports whether it was live. Of concurrent
	// takers of one member exactly one gets true.
	TakeMember(ctx context.Context, set, member string) (bool, error)
	// Members answers the live members, in no particular order.
	Members(ctx context.Context, set string) ([]string, error)
	// CountMembers answers how many members are live.
	CountMembers(ctx context.Context, set string) (int, error)
}

// Lease is one presence lease to write or renew: a value under Key (none when Key is
// empty) and Member in each of Sets, all for TTL (a WebSocket socket: what the session list
// shows of it, and its membership in its app's and its user's sets).
type Lease struct {
	Key    string
	Value  []byte
	Member string
	Sets   []string
	TTL    time.Duration
}

// Batches do the work of many keys in one round trip, so that a node's periodic work for
// an app costs one call whatever the number of its sockets.
type Batches interface {
	// GetValues answers the values of keys in order, nil for a key that is absent or
	// expired.
	GetValues(ctx context.Context, keys []string) ([][]byte, error)
	// PutLeases writes every lease (SetValue and AddMember without a limit, each).
	PutLeases(ctx context.Context, leases []Lease) error
}

// Leases are expiring sets with a bound on admission (floating license seats): a member
// is a lease, live until its ttl runs out, and the set never holds more than limit live
// leases. They share their sets with ExpiringSets, whose TakeMember, Members and
// CountMembers release, list and count leases.
type Leases interface {
	// AcquireMember puts member into set for ttl when it is already live there (a renewal:
	// it gets the new ttl, whatever the limit) or the set holds fewer than limit live
	// members; otherwise it changes nothing and answers false. It is atomic across nodes:
	// of concurrent acquirers of free places exactly as many as there are places succeed.
	AcquireMember(ctx context.Context, set, member string, ttl time.Duration, limit int) (bool, error)
}

// Bus carries messages between the nodes of a cluster (a dashboard change on one node that
// every node's actors must see; later socket deliveries). Delivery is at most once and only
// to subscribers connected when the message is published: a node that was away reloads
// state from storage instead of replaying missed messages.
type Bus interface {
	// Publish sends payload to every current subscriber of topic on every node, this one
	// included.
	Publish(ctx context.Context, topic string, payload []byte) error
	// Subscribe calls fn for each message published to topic, in publish order per
	// publisher, on a goroutine owned by the engine; fn must not block for long. The
	// returned function ends the subscription (it may be called more than once). Messages
	// published after Subscribe returns are delivered.
	Subscribe(ctx context.Context, topic string, fn func(payload []byte)) (unsubscribe func(), err error)
}

// Engine is everything a node coordinates with its peers through.
type Engine interface {
	RateLimiter
	OneTimeTokens
	Counters
	Values
	ExpiringSets
	Batches
	Leases
	Presence
	Bus
	// Name says which engine this is ("memory", "redis"), for logs.
	Name() string
	// Ping reports whether the engine answers, for readiness checks.
	Ping(ctx context.Context) error
	// Close stops the engine's background work and releases its connections.
	Close() error
}
