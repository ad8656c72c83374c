package realtime

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime/debug"
	"sync"
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

// tickParallel bounds the apps whose batch eachApp runs at the same moment.
const tickParallel = 8

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

// eachApp runs fn now for every app this node holds client sockets of, tickParallel at
// a time, and waits for them.
func (s *Service) eachApp(fn func(appID string, clients []*Client)) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	apps := map[string][]*Client{}
	for appID, list := range s.reg.AllSockets(ctx) {
		if clients := clientsOf(list); len(clients) > 0 {
			apps[appID] = clients
		}
	}
	sem := make(chan struct{}, tickParallel)
	var wg sync.WaitGroup
	for appID, clients := range apps {
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			s.safely(appID, func() { fn(appID, clients) })
		}()
	}
	wg.Wait()
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

// renewApp renews the leases of an app's sockets in one call.
func (s *Service) renewApp(appID string, clients []*Client) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	leases := make([]cluster.Lease, 0, len(clients))
	for _, c := range clients {
		l, err := s.leaseOf(c)
		if err != nil {
			s.d.Log.Warn("realtime: cannot encode a socket's presence", "socket", c.ID, "err", err)
			continue
		}
		leases = append(leases, l)
	}
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

// AppChanged tells the app's actor on this node that the app changed (paused, disabled,
// plan, rules, hooks): it reloads the app's snapshot and revalidates the app's sockets at
// once, in one batch (the revalidation tick is OnChange). It never blocks. A node that
// shares its AppActors with the server (Deps.Registry) gets the message from the server's
// wiring instead (actors.Apps.Announce, ListenChanges).
func (s *Service) AppChanged(appID string) { s.reg.Invalidate(appID) }

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
