package sockets

import (
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/keyward/keyward/actors/wire"
	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/cluster/memory"
	"github.com/keyward/keyward/core/client"
	"github.com/keyward/keyward/core/realtime"
)

// TestSessionListIsOneBatchedRead: the session list of 500 sockets is asked of the app's
// actor and costs one read of the app's set and one batched read of the sockets' values,
// not a read per socket; the count agrees with it and with every socket's user.
func TestSessionListIsOneBatchedRead(t *testing.T) {
	known := sessions{}
	for i := range realtime.MaxClientsPerApp {
		known[fmt.Sprintf("tok-u%d", i)] = user(fmt.Sprintf("u%d", i))
	}
	engine := &countingEngine{Engine: memory.New(memory.Config{})}
	t.Cleanup(func() { engine.Close() })
	s := New(Deps{Engine: engine, Sessions: known, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	for i := range realtime.MaxClientsPerApp {
		if _, err := s.ConnectClient(t.Context(), client.Caller{IP: "192.0.2.1"}, fmt.Sprintf("tok-u%d", i), &recorder{}); err != nil {
			t.Fatalf("socket %d: %v", i, err)
		}
	}
	engine.valueReads.Store(0)
	engine.batchedReads.Store(0)
	list, err := s.Sessions(t.Context(), "app")
	if err != nil {
		t.Fatal(err)
	}
	if single, batched := engine.valueReads.Load(), engine.batchedReads.Load(); single != 0 || batched != 1 {
		t.Fatalf("listing %d sessions read %d values one by one and %d batches; want 0 and 1", realtime.MaxClientsPerApp, single, batched)
	}
	if len(list) != realtime.MaxClientsPerApp {
		t.Fatalf("%d sessions listed, want %d", len(list), realtime.MaxClientsPerApp)
	}
	users := map[string]bool{}
	for i, info := range list {
		users[info.UserID] = true
		if i > 0 && info.ConnectedAt.Before(list[i-1].ConnectedAt) {
			t.Fatalf("session %d connected before the one listed ahead of it", i)
		}
	}
	if len(users) != realtime.MaxClientsPerApp {
		t.Fatalf("%d distinct users listed, want %d", len(users), realtime.MaxClientsPerApp)
	}
	if n, err := s.Online(t.Context(), "app"); err != nil || n != realtime.MaxClientsPerApp {
		t.Fatalf("online %d, %v; want %d", n, err, realtime.MaxClientsPerApp)
	}
}

// TestNoSessionsIsAnEmptyList: an app without sockets lists no sessions as an empty list
// (JSON [], not null).
func TestNoSessionsIsAnEmptyList(t *testing.T) {
	engine := memory.New(memory.Config{})
	t.Cleanup(func() { engine.Close() })
	s := New(Deps{Engine: engine, Sessions: sessions{}, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(s.Close)
	list, err := s.Sessions(t.Context(), "app")
	if err != nil || list == nil || len(list) != 0 {
		t.Fatalf("got %#v, %v; want an empty list", list, err)
	}
}

// TestRenewalRestoresAndSupersedes: a renewal puts back a socket whose presence lapsed
// (its user has no other socket), and its actor writes what the session list shows of it
// again; a socket that a newer socket of its user replaced meanwhile is closed as
// replaced, without coming back.
func TestRenewalRestoresAndSupersedes(t *testing.T) {
	onEachEngine(t, testRenewalRestoresAndSupersedes)
}

func testRenewalRestoresAndSupersedes(t *testing.T, twoNodes pair) {
	a, _ := twoNodes(t, sessions{"tok-u1": user("u1")})
	ctx := t.Context()
	p := &recorder{}
	c, err := a.ConnectClient(ctx, client.Caller{IP: "192.0.2.1"}, "tok-u1", p)
	if err != nil {
		t.Fatal(err)
	}
	// The lease lapsed (a node that could not renew in time).
	if n, err := a.d.Engine.Release(ctx, "app", c.ID); err != nil || n != 1 {
		t.Fatalf("release: %d, %v", n, err)
	}
	if n, _ := a.Online(ctx, "app"); n != 0 {
		t.Fatalf("online after the lapse: %d", n)
	}
	renewNow(t, a)
	waitUntil(t, "the restored socket described again", func() bool {
		list, err := a.Sessions(ctx, "app")
		return err == nil && len(list) == 1 && list[0].ID == c.ID && list[0].Username == "name-u1" && list[0].Status == "online"
	})
	if p.closedWith() != 0 {
		t.Fatalf("a restored socket closed with %d", p.closedWith())
	}

	// A newer socket of the user, admitted elsewhere while this one had lapsed.
	if _, err := a.d.Engine.Release(ctx, "app", c.ID); err != nil {
		t.Fatal(err)
	}
	adm, err := a.d.Engine.Admit(ctx, "app", cluster.PresentSocket{ID: "newer", User: "u1", Info: []byte(`{"id":"newer","userId":"u1"}`)}, a.leaseTTL, realtime.MaxClientsPerApp)
	if err != nil || !adm.Admitted {
		t.Fatalf("admit the newer socket: %+v, %v", adm, err)
	}
	renewNow(t, a)
	waitUntil(t, "the superseded socket's close", func() bool { return p.closedWith() == wire.CodeReplaced })
	if id, ok, err := a.d.Engine.SocketOf(ctx, "app", "u1"); err != nil || !ok || id != "newer" {
		t.Fatalf("the user's socket is %q (%v, %v), want the newer one", id, ok, err)
	}
}
