package app

import (
	"context"
	"fmt"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/keyward/keyward/actors/actorkit"
	"github.com/keyward/keyward/cluster"
)

// A client socket's presence is a lease in the cluster engine, and its app's actor keeps
// it: every third of the lease's ttl the actor renews the leases of all the app's
// leaseholders on this node in one engine call (off its Receive; the answer comes back as
// a message), and when a leaseholder leaves the actor releases its lease before the Leave
// answers. A renewal's findings go to the sockets' actors as messages (LeaseRestored,
// LeaseSuperseded). Since the actor alone decides who is registered, a socket that left
// while a renewal was under way (and may have had its presence put back by it) is known
// when the renewal's answer comes in and is released again: no flag is shared with
// another goroutine.

// Leaser is the cluster engine's presence as an AppActor keeps its sockets' leases
// (cluster.Presence).
type Leaser interface {
	Renew(ctx context.Context, app string, sockets []cluster.SocketLease, ttl time.Duration) (cluster.Renewal, error)
	Release(ctx context.Context, app string, ids ...string) (int, error)
}

// LeaseConfig is where the AppActors keep their leaseholders' leases and for how long a
// lease lives without renewal.
type LeaseConfig struct {
	Presence Leaser
	TTL      time.Duration
	// Watch, when set, keeps each app that has a socket of kind WatchKind (a dashboard) on
	// this node marked as watched for TTL, renewed with the leases: the nodes that hold the
	// app's client sockets tell dashboards of a socket's coming and going only while some
	// node marks the app watched (nobody reads it otherwise).
	Watch     Watcher
	WatchKind string
}

// Watcher marks an app as watched by some node's dashboards for ttl (actors/sockets keeps
// the mark in the cluster engine).
type Watcher interface {
	MarkWatched(ctx context.Context, app string, ttl time.Duration) error
}

// Leaseholder is a socket whose presence is a lease (a client socket): its app's actor
// renews and releases the lease under the socket's registered id and LeaseUser.
type Leaseholder interface {
	Member
	// LeaseUser is the user the socket's lease is held for; it never changes.
	LeaseUser() string
}

// Messages an AppActor sends a leaseholder's actor after a renewal.
type (
	// LeaseRestored: the socket's presence had lapsed and was put back without what the
	// session list shows of it; the socket writes that again.
	LeaseRestored struct{}
	// LeaseSuperseded: a newer socket of the user holds the user's place; the socket is
	// closed as replaced.
	LeaseSuperseded struct{}
)

// Messages of the leases.
type (
	// renewNow starts a renewal; waiter (nil from the timer) is answered leaseReply once
	// the renewal's answer was handled.
	renewNow struct{ waiter *actor.PID }
	renewed  struct {
		leases  []cluster.SocketLease
		res     cluster.Renewal
		err     error
		waiters []*actor.PID
	}
	// released: the lease of a socket that left was released (or its release failed:
	// the lease runs out by itself); its Leave goes on.
	released struct {
		id     string
		socket Member
		waiter *actor.PID
	}
	leaseReply struct{ err error }
)

// leaseTimeout bounds one renewal or release.
const leaseTimeout = 5 * time.Second

// SetLeases has the AppActors keep the leases of their leaseholders in cfg.Presence; it
// is called once, before the first socket registers.
func (a *Apps[S]) SetLeases(cfg LeaseConfig) {
	a.mu.Lock()
	a.leases = cfg
	a.mu.Unlock()
}

// LeaseErrors answers how many renewals failed, for metrics.
func (a *Apps[S]) LeaseErrors() uint64 { return a.leaseErrors.Load() }

// RenewNow has the app's actor renew its leaseholders' leases now; it answers once the
// renewal's findings were sent to the sockets (for tests and the operator's tools).
func (a *Apps[S]) RenewNow(ctx context.Context, appID string) error {
	a.mu.Lock()
	pid := a.pids[appID]
	a.mu.Unlock()
	if pid == nil {
		return nil // no actor: no sockets
	}
	res, err := a.ask(ctx, appID, renewNow{})
	if err != nil {
		return err
	}
	r, _ := res.(leaseReply)
	return r.err
}

// receiveLeases handles the leases' messages; it answers false for others.
func (s *appActor[S]) receiveLeases(ctx actor.Context) bool {
	r := s.reg
	switch m := ctx.Message().(type) {
	case renewNow:
		if sender := ctx.Sender(); sender != nil {
			r.renewWaiters = append(r.renewWaiters, sender)
		}
		if !r.renewing {
			s.startRenewal(ctx)
		}
	case renewed:
		r.renewing = false
		s.renewedLeases(ctx, m)
		if len(r.renewWaiters) > 0 {
			// Asked during the renewal under way: answered by one that starts after it.
			s.startRenewal(ctx)
		}
	case released:
		s.finishLeave(ctx, m.id, m.socket, true, m.waiter)
	default:
		return false
	}
	return true
}

// startRenewal renews the leases of the app's leaseholders off the actor.
func (s *appActor[S]) startRenewal(ctx actor.Context) {
	r := s.reg
	waiters := r.renewWaiters
	r.renewWaiters = nil
	cfg := s.leaseConfig()
	leases := make([]cluster.SocketLease, 0, len(r.sockets))
	watched := false
	for id, m := range r.sockets {
		if h, ok := m.(Leaseholder); ok {
			leases = append(leases, cluster.SocketLease{ID: id, User: h.LeaseUser()})
		} else if cfg.Watch != nil && m.Kind() == cfg.WatchKind {
			watched = true
		}
	}
	if cfg.Presence == nil {
		leases = leases[:0]
	}
	if len(leases) == 0 && !watched {
		for _, w := range waiters {
			ctx.Send(w, leaseReply{})
		}
		return
	}
	r.renewing = true
	appID, log := s.appID, s.dir.cfg.Log
	actorkit.Pipe(s.dir.work, ctx.ActorSystem().Root, ctx.Self(), "a lease renewal", []any{"app", appID}, leaseTimeout,
		func(ctx context.Context) renewed {
			if watched {
				if err := cfg.Watch.MarkWatched(ctx, appID, cfg.TTL); err != nil {
					log.Warn("actors: cannot mark an app as watched by this node's dashboards", "app", appID, "err", err)
				}
			}
			if len(leases) == 0 {
				return renewed{waiters: waiters}
			}
			res, err := cfg.Presence.Renew(ctx, appID, leases, cfg.TTL)
			return renewed{leases: leases, res: res, err: err, waiters: waiters}
		},
		func(p any) renewed {
			return renewed{leases: leases, err: fmt.Errorf("actors: the renewal panicked: %v", p), waiters: waiters}
		})
}

// renewedLeases carries out what a renewal found.
func (s *appActor[S]) renewedLeases(ctx actor.Context, m renewed) {
	r := s.reg
	if m.err != nil {
		s.dir.leaseErrors.Add(1)
		s.dir.cfg.Log.Warn("actors: cannot renew the leases of an app's sockets", "app", s.appID, "sockets", len(m.leases), "err", m.err)
	} else {
		tell := func(ids []string, msg any) {
			for _, id := range ids {
				if _, held := r.sockets[id]; held {
					if pid := r.live[id]; pid != nil {
						ctx.Send(pid, msg)
					}
				}
			}
		}
		tell(m.res.Restored, LeaseRestored{})
		tell(m.res.Superseded, LeaseSuperseded{})
	}
	// A socket that left while its lease was being renewed may have its presence back: it
	// is released again.
	var gone []string
	for _, l := range m.leases {
		if _, held := r.sockets[l.ID]; !held {
			gone = append(gone, l.ID)
		}
	}
	if len(gone) > 0 {
		s.releaseLeases(gone)
	}
	for _, w := range m.waiters {
		ctx.Send(w, leaseReply{err: m.err})
	}
}

// releaseLeases releases leases off the actor, answering nothing.
func (s *appActor[S]) releaseLeases(ids []string) {
	cfg, appID, log := s.leaseConfig(), s.appID, s.dir.cfg.Log
	s.dir.work.Go("a lease release", []any{"app", appID}, func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, leaseTimeout)
		defer cancel()
		if _, err := cfg.Presence.Release(ctx, appID, ids...); err != nil {
			log.Warn("actors: cannot release the leases of sockets that left", "app", appID, "sockets", len(ids), "err", err)
		}
	}, nil)
}

// releaseOnLeave releases the lease of a leaseholder that left off the actor, then goes
// on with its Leave (released). It answers false when socket holds no lease.
func (s *appActor[S]) releaseOnLeave(ctx actor.Context, id string, socket Member, waiter *actor.PID) bool {
	cfg := s.leaseConfig()
	if _, ok := socket.(Leaseholder); !ok || cfg.Presence == nil {
		return false
	}
	appID, log := s.appID, s.dir.cfg.Log
	done := released{id: id, socket: socket, waiter: waiter}
	actorkit.Pipe(s.dir.work, ctx.ActorSystem().Root, ctx.Self(), "a lease release", []any{"app", appID, "socket", id}, leaseTimeout,
		func(ctx context.Context) released {
			if _, err := cfg.Presence.Release(ctx, appID, id); err != nil {
				// The lease runs out by itself within its ttl.
				log.Warn("actors: cannot release a socket's lease", "app", appID, "socket", id, "err", err)
			}
			return done
		},
		func(any) released { return done })
	return true
}

func (s *appActor[S]) leaseConfig() LeaseConfig {
	s.dir.mu.Lock()
	defer s.dir.mu.Unlock()
	return s.dir.leases
}
