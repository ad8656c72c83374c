package cluster

import (
	"context"
	"time"
)

// PresentSocket is one client socket connected to an app somewhere in the cluster, as
// Presence keeps it: its id, its user and what the session list shows of it (Info, opaque
// to the engine; nil until Admit or Describe writes it).
type PresentSocket struct {
	ID   string
	User string
	Info []byte
}

// SocketLease names one socket in a renewal: its id and its user (a renewal that finds the
// socket gone puts it back under its user, see Presence.Renew).
type SocketLease struct {
	ID   string
	User string
}

// Admission is the answer of Presence.Admit.
type Admission struct {
	// Admitted is false when the app already held its limit of live sockets; nothing
	// changed then.
	Admitted bool
	// Replaced is the id of the user's earlier socket that the admission removed (one
	// socket per user: the newer wins); empty when the user had none. Its holder, on
	// whatever node, must close it.
	Replaced string
}

// Renewal is the answer of Presence.Renew for the sockets it was given that were not
// live any more (a node that could not renew in time, a release racing the renewal).
type Renewal struct {
	// Restored sockets had lapsed and their user had no other live socket: they were put
	// back, without Info (their holder writes it again with Describe). A restored socket
	// is not counted against the app's limit, as a renewal never is.
	Restored []string
	// Superseded sockets had been replaced by a newer socket of their user: they were
	// not put back, and their holder must close them.
	Superseded []string
}

// Presence keeps which client sockets are connected to each app across the cluster (SPEC
// 4.11, 6.3): at most a given number of live sockets per app and one per user. Each socket
// is a lease that its node renews for all its sockets of an app in one call, so a node that
// dies leaves the counts and lists within one ttl. Every method is atomic across nodes;
// expired sockets are never counted, listed or answered. An app's state lives in one place
// of the engine (on a Redis Cluster, one hash slot), so each call is one round trip.
//
// It replaces the expiring sets core/realtime kept per app and per user with a value per
// socket: the admission's lease, count and user-set read become one Admit (whose Replaced
// is the earlier socket to close, so two sockets of one user racing need no tie-break), the
// PutLeases renewal one Renew, the three-key release one Release, the status write one
// Describe, and the count, the session list and the user's online check Count, List and
// SocketOf.
type Presence interface {
	// Admit puts socket s in app for ttl when the app holds fewer than limit live sockets,
	// not counting the user's earlier socket, which the admission replaces (Admission
	// .Replaced). Admitting a socket that is live already renews it and writes its Info,
	// whatever the limit. Of concurrent admissions to the last places exactly as many
	// succeed as there are places, and of concurrent admissions of one user exactly one
	// socket is left live, each replacing the one admitted before it.
	Admit(ctx context.Context, app string, s PresentSocket, ttl time.Duration, limit int) (Admission, error)
	// Renew extends the leases of the app's sockets to ttl, in one call whatever their
	// number. A socket that is not live any more is put back or reported superseded
	// (Renewal).
	Renew(ctx context.Context, app string, sockets []SocketLease, ttl time.Duration) (Renewal, error)
	// Release removes the sockets and answers how many of them were live.
	Release(ctx context.Context, app string, ids ...string) (int, error)
	// Describe replaces a live socket's Info (status, metadata) and answers whether the
	// socket was live; it does not renew the lease.
	Describe(ctx context.Context, app, id string, info []byte) (bool, error)
	// Count answers how many sockets of the app are live.
	Count(ctx context.Context, app string) (int, error)
	// List answers the app's live sockets, in no particular order.
	List(ctx context.Context, app string) ([]PresentSocket, error)
	// SocketOf answers the user's live socket in the app; ok is false when it has none.
	SocketOf(ctx context.Context, app, user string) (id string, ok bool, err error)
}
