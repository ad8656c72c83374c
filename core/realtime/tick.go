package realtime

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/keyward/keyward/actors"
	"github.com/keyward/keyward/actors/wire"
	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/core/client"
)

// The node's periodic work on its client sockets runs per app, batched, driven by the
// app's actor (actors.Tick: its timers, the work on a goroutine): every third of the
// lease ttl the leases of an app's sockets are renewed in one cluster-engine call
// (Presence.Renew), and every RevalidateEvery, and at once when the app changed, its sockets
// are checked again in one call of Sessions.CheckSockets (one engine read for the
// sessions, one storage query for the users), not a round per socket. There is no
// goroutine or timer per socket.

// The ticks of the app actors (actors.Tick.Name).
const (
	tickRenew      = "renew"
	tickRevalidate = "revalidate"
)

// ticker is the Service as the app actors' actors.TickWork: each tick runs over the
// app's client sockets, until Close.
type ticker struct{ s *Service }

func (t ticker) RunTick(_ context.Context, appID string, tick actors.Tick, sockets []actors.Member) {
	s := t.s
	s.mu.RLock()
	stopped := s.stopped
	s.mu.RUnlock()
	clients := clientsOf(sockets)
	if stopped || len(clients) == 0 {
		return
	}
	switch tick.Name {
	case tickRenew:
		s.safely(appID, func() { s.renewApp(appID, clients) })
	case tickRevalidate:
		s.safely(appID, func() { s.recheckApp(appID, clients) })
	}
}

// safely runs fn, turning a panic into a log line: periodic work never ends the process.
func (s *Service) safely(appID string, fn func()) {
	defer func() {
		if r := recover(); r != nil {
			s.d.Log.Error("realtime: panic in the periodic work of an app", "app", appID, "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
		}
	}()
	fn()
}

// renewApp renews the leases of an app's sockets on this node in one engine call. A
// renewal needs only each socket's id and user, which never change, so no socket's actor
// is asked. A socket whose presence had lapsed is put back, and its actor writes what the
// session list shows of it again; one that a newer socket of its user replaced meanwhile
// is closed as replaced.
func (s *Service) renewApp(appID string, clients []*Client) {
	leases := make([]cluster.SocketLease, 0, len(clients))
	byID := make(map[string]*Client, len(clients))
	for _, c := range clients {
		if !c.gone.Load() {
			leases = append(leases, cluster.SocketLease{ID: c.ID, User: c.User.UserID})
			byID[c.ID] = c
		}
	}
	if len(leases) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := s.d.Engine.Renew(ctx, appID, leases, s.leaseTTL)
	if err != nil {
		s.stats.leaseErrors.Add(1)
		s.d.Log.Warn("realtime: cannot renew the presence of an app's sockets", "app", appID, "sockets", len(leases), "err", err)
		return
	}
	for _, id := range r.Restored {
		if c := byID[id]; c != nil {
			c.ref.Tell(redescribe{})
		}
	}
	for _, id := range r.Superseded {
		if c := byID[id]; c != nil {
			c.ref.Tell(&delivery{App: appID, To: toConn, Conn: id, Msg: replacedMsg, Close: wire.CodeReplaced, Reason: replacedReason})
		}
	}
	// A socket that ended while its lease was being renewed may have its presence back: it
	// is released again (its owner released it already, or is about to).
	for _, c := range clients {
		if c.gone.Load() {
			s.release(ctx, c)
		}
	}
}

// recheckApp checks an app's sockets again in one batch.
func (s *Service) recheckApp(appID string, clients []*Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	checks := make([]client.SocketCheck, len(clients))
	for i, c := range clients {
		checks[i] = client.SocketCheck{Caller: c.Caller, Token: c.User.Token}
	}
	errs := s.d.Sessions.CheckSockets(ctx, appID, checks)
	for i, c := range clients {
		if i < len(errs) && errs[i] != nil {
			// The verdict is carried out by the socket's actor, in order with the rest.
			c.ref.Tell(verdict{err: errs[i]})
		}
	}
}
