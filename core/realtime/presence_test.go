package realtime

import (
	"fmt"
	"io"
	"log/slog"
	"testing"

	"github.com/keyward/keyward/cluster/memory"
	"github.com/keyward/keyward/core/client"
)

// TestSessionListIsOneBatchedRead: the session list of 500 sockets is asked of the app's
// actor and costs one read of the app's set and one batched read of the sockets' values,
// not a read per socket; the count agrees with it and with every socket's user.
func TestSessionListIsOneBatchedRead(t *testing.T) {
	known := sessions{}
	for i := range MaxClientsPerApp {
		known[fmt.Sprintf("tok-u%d", i)] = user(fmt.Sprintf("u%d", i))
	}
	engine := &countingEngine{Engine: memory.New(memory.Config{})}
	t.Cleanup(func() { engine.Close() })
	s := New(Deps{Engine: engine, Sessions: known, Log: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err := s.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	for i := range MaxClientsPerApp {
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
		t.Fatalf("listing %d sessions read %d values one by one and %d batches; want 0 and 1", MaxClientsPerApp, single, batched)
	}
	if len(list) != MaxClientsPerApp {
		t.Fatalf("%d sessions listed, want %d", len(list), MaxClientsPerApp)
	}
	users := map[string]bool{}
	for i, info := range list {
		users[info.UserID] = true
		if i > 0 && info.ConnectedAt.Before(list[i-1].ConnectedAt) {
			t.Fatalf("session %d connected before the one listed ahead of it", i)
		}
	}
	if len(users) != MaxClientsPerApp {
		t.Fatalf("%d distinct users listed, want %d", len(users), MaxClientsPerApp)
	}
	if n, err := s.Online(t.Context(), "app"); err != nil || n != MaxClientsPerApp {
		t.Fatalf("online %d, %v; want %d", n, err, MaxClientsPerApp)
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
