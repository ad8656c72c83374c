package realtime

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/core/client"
)

// The node's periodic work on its client sockets runs per app, batched, driven by the
// app's actor (actors.Tick: its timers, the work on a goroutine): every third of the
// lease ttl the leases of an app's sockets are renewed in one cluster-engine call
// (PutLeases), and every RevalidateEvery, and at once when the app changed, its sockets
// are checked again in one call of Sessions.CheckSockets (one engine read for the
// sessions, one storage query for the users), not a round per socket. There is no
// goroutine or timer per socket.

// tickWork is the actors' tick for fn: the app's client sockets, until Close.
func (s *Service) tickWork(fn func(appID string, clients []*Client)) func(context.Context, string, []any) {
	return func(_ context.Context, appID string, sockets []any) {
		s.mu.RLock()
		stopped := s.stopped
		s.mu.RUnlock()
		if clients := clientsOf(sockets); !stopped && len(clients) > 0 {
			s.safely(appID, func() { fn(appID, clients) })
		}
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

// askPresenceWait bounds how long a renewal waits for the sockets' actors to answer with
// their leases; an actor answers at once unless it stopped (its socket is leaving).
const askPresenceWait = 2 * time.Second

// renewApp renews the leases of an app's sockets in one call. Each socket's actor is
// asked for its lease (its status and metadata are the actor's alone).
func (s *Service) renewApp(appID string, clients []*Client) {
	leases := s.askLeases(clients)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.d.Engine.PutLeases(ctx, leases); err != nil {
		s.stats.leaseErrors.Add(1)
		s.d.Log.Warn("realtime: cannot renew the presence of an app's sockets", "app", appID, "sockets", len(leases), "err", err)
		return
	}
	// A socket that ended while its lease was being renewed has its presence back: it is
	// released again (its owner released it already, or is about to).
	for _, c := range clients {
		if c.gone.Load() {
			s.release(ctx, c)
		}
	}
}

// askLeases asks each socket's actor for its lease and answers those that came within
// askPresenceWait.
func (s *Service) askLeases(clients []*Client) []cluster.Lease {
	answers := make(chan presenceAnswer, len(clients))
	asked := 0
	for _, c := range clients {
		if c.ref.Valid() && !c.gone.Load() {
			c.ref.Tell(presenceAsk{into: answers})
			asked++
		}
	}
	leases := make([]cluster.Lease, 0, asked)
	wait := time.NewTimer(askPresenceWait)
	defer wait.Stop()
	for range asked {
		select {
		case a := <-answers:
			if a.err != nil {
				s.d.Log.Warn("realtime: cannot encode a socket's presence", "socket", a.id, "err", a.err)
				continue
			}
			leases = append(leases, a.lease)
		case <-wait.C:
			return leases
		}
	}
	return leases
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

// leaseOf is socket c's presence lease: what the session list shows of it, and its
// membership in its app's and its user's sets.
func (s *Service) leaseOf(c *Client) (cluster.Lease, error) {
	info, err := json.Marshal(c.info())
	if err != nil {
		return cluster.Lease{}, fmt.Errorf("realtime: encode presence: %w", err)
	}
	return cluster.Lease{Key: socketKey(c.ID), Value: info, Member: c.ID,
		Sets: []string{appSocketsKey(c.User.AppID), userSocketsKey(c.User.AppID, c.User.UserID)}, TTL: s.leaseTTL}, nil
}
