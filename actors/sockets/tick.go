package sockets

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"

	"github.com/keyward/keyward/actors/app"
	"github.com/keyward/keyward/actors/session"
	"github.com/keyward/keyward/core/client"
)

// The node's periodic work on its client sockets runs per app, batched, driven by the
// app's actor (app.Tick: its timers, the work on a goroutine): every realtime.RevalidateEvery,
// and at once when the app changed, its sockets are checked again in one call of
// Sessions.CheckSockets (one engine read for the sessions, one storage query for the
// users), not a round per socket. The leases are the app's actor's own (app.LeaseConfig:
// renewed in one cluster-engine call every third of the lease ttl, released when a socket
// leaves). There is no goroutine or timer per socket.

// The ticks of the app actors (app.Tick.Name).
const (
	tickRevalidate = "revalidate"
)

// ticker is the Service as the app actors' app.TickWork: each tick runs over the
// app's client sockets, until Close.
type ticker struct{ s *Service }

func (t ticker) RunTick(_ context.Context, appID string, tick app.Tick, sockets []app.Member) {
	s := t.s
	s.mu.RLock()
	stopped := s.stopped
	s.mu.RUnlock()
	clients := clientsOf(sockets)
	if stopped || len(clients) == 0 {
		return
	}
	switch tick.Name {
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
			c.Ref().Tell(session.Verdict{Err: errs[i]})
		}
	}
}
