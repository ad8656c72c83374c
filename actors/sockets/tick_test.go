package sockets

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/actors/wire"
	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/cluster/memory"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/client"
	"github.com/keyward/keyward/core/realtime"
	"github.com/keyward/keyward/internal/testenv"
)

// countingEngine counts the presence renewals and reads of the memory engine: valueReads
// are reads of one socket (SocketOf), batchedReads reads of an app's sockets (List).
type countingEngine struct {
	*memory.Engine
	leaseCalls, leases       atomic.Int64
	valueReads, batchedReads atomic.Int64
}

func (e *countingEngine) SocketOf(ctx context.Context, app, user string) (string, bool, error) {
	e.valueReads.Add(1)
	return e.Engine.SocketOf(ctx, app, user)
}

func (e *countingEngine) List(ctx context.Context, app string) ([]cluster.PresentSocket, error) {
	e.batchedReads.Add(1)
	return e.Engine.List(ctx, app)
}

func (e *countingEngine) Renew(ctx context.Context, app string, ls []cluster.SocketLease, ttl time.Duration) (cluster.Renewal, error) {
	e.leaseCalls.Add(1)
	e.leases.Add(int64(len(ls)))
	return e.Engine.Renew(ctx, app, ls, ttl)
}

// countingSessions counts the batched checks; revoked tokens fail with UNAUTHORIZED and
// panicky makes a check panic.
type countingSessions struct {
	sessions
	mu      sync.Mutex
	calls   int
	checked int
	revoked map[string]bool
	panicky bool
}

func (c *countingSessions) CheckSockets(ctx context.Context, appID string, socks []client.SocketCheck) []error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.panicky {
		panic("a check went wrong")
	}
	c.calls++
	c.checked += len(socks)
	errs := c.sessions.CheckSockets(ctx, appID, socks)
	for i, sk := range socks {
		if c.revoked[sk.Token] {
			errs[i] = core.E(core.CodeUnauthorized, "session expired or invalid; call init again")
		}
	}
	return errs
}

// TestTickIsOneCallPerApp: the periodic work on 500 sockets of an app is one lease write
// and one batched check, not one per socket; a socket whose session no longer passes is
// told and closed, the others stay; a panic in the periodic work is logged and ends
// nothing.
func TestTickIsOneCallPerApp(t *testing.T) {
	known := sessions{}
	for i := range realtime.MaxClientsPerApp {
		known[fmt.Sprintf("tok-u%d", i)] = user(fmt.Sprintf("u%d", i))
	}
	checker := &countingSessions{sessions: known, revoked: map[string]bool{}}
	engine := &countingEngine{Engine: memory.New(memory.Config{})}
	t.Cleanup(func() { engine.Close() })
	var logged testenv.LogBuffer
	log := slog.New(slog.NewTextHandler(&logged, nil))
	s := New(Deps{Engine: engine, Sessions: checker, Log: log})
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	peers := make([]*recorder, realtime.MaxClientsPerApp)
	for i := range peers {
		peers[i] = &recorder{}
		if _, err := s.ConnectClient(t.Context(), client.Caller{IP: "192.0.2.1"}, fmt.Sprintf("tok-u%d", i), peers[i]); err != nil {
			t.Fatalf("socket %d: %v", i, err)
		}
	}

	engine.leaseCalls.Store(0)
	engine.leases.Store(0)
	renewNow(t, s)
	if calls, n := engine.leaseCalls.Load(), engine.leases.Load(); calls != 1 || n != realtime.MaxClientsPerApp {
		t.Fatalf("renewing %d sockets: %d calls for %d leases; want 1 call", realtime.MaxClientsPerApp, calls, n)
	}
	if n, _ := s.Online(t.Context(), "app"); n != realtime.MaxClientsPerApp {
		t.Fatalf("online after a renewal: %d", n)
	}

	checker.revoked["tok-u7"] = true
	runNow(t, s, s.recheckApp)
	if checker.calls != 1 || checker.checked != realtime.MaxClientsPerApp {
		t.Fatalf("checking %d sockets: %d calls for %d sockets; want 1 call", realtime.MaxClientsPerApp, checker.calls, checker.checked)
	}
	// The verdict is carried out by the socket's actor.
	waitUntil(t, "the revoked socket's close", func() bool { return peers[7].closedWith() != 0 })
	for i, p := range peers {
		want := 0
		if i == 7 {
			want = wire.CodeForceLogout
		}
		if got := p.closedWith(); got != want {
			t.Fatalf("socket %d closed with %d, want %d", i, got, want)
		}
	}
	if got := peers[7].types(); len(got) != 1 || got[0] != wire.TypeForceLogout {
		t.Fatalf("revoked socket got %v", got)
	}

	// An app change does the same at once, as a message to the app's actor, in one batch.
	checker.mu.Lock()
	checker.revoked["tok-u8"] = true
	calls := checker.calls
	checker.mu.Unlock()
	s.reg.Invalidate("app")
	waitUntil(t, "the revalidation of an app change", func() bool { return peers[8].closedWith() == wire.CodeForceLogout })
	checker.mu.Lock()
	if checker.calls != calls+1 {
		t.Fatalf("an app change made %d batched checks, want 1", checker.calls-calls)
	}
	checker.mu.Unlock()

	checker.mu.Lock()
	checker.panicky = true
	checker.mu.Unlock()
	runNow(t, s, s.recheckApp)
	if !strings.Contains(logged.String(), "panic in the periodic work") || !strings.Contains(logged.String(), "app=app") {
		t.Fatalf("a panicking check was not logged: %s", logged.String())
	}
	if peers[9].closedWith() != 0 {
		t.Fatal("a panicking check closed a socket")
	}
}

// runNow runs fn now over the client sockets of every app s holds, as the apps' ticks
// do, one app after the other.
func runNow(t *testing.T, s *Service, fn func(appID string, clients []*Client)) {
	t.Helper()
	for appID, list := range s.reg.AllSockets(t.Context()) {
		if clients := clientsOf(list); len(clients) > 0 {
			s.safely(appID, func() { fn(appID, clients) })
		}
	}
}

// renewNow has the actor of every app s holds renew its sockets' leases now, as its
// timer does, and waits until the renewal's findings reached the sockets' actors.
func renewNow(t *testing.T, s *Service) {
	t.Helper()
	for appID := range s.reg.AllSockets(t.Context()) {
		if err := s.reg.RenewNow(t.Context(), appID); err != nil {
			t.Fatalf("renew the leases of %s: %v", appID, err)
		}
	}
}
