package client

import (
	"context"
	"fmt"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/cluster/memory"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/plans"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/sqlite"
)

// countingEngine counts the session reads of the memory engine.
type countingEngine struct {
	*memory.Engine
	one, many atomic.Int64
}

func (e *countingEngine) GetValue(ctx context.Context, key string) ([]byte, time.Duration, bool, error) {
	e.one.Add(1)
	return e.Engine.GetValue(ctx, key)
}

func (e *countingEngine) GetValues(ctx context.Context, keys []string) ([][]byte, error) {
	e.many.Add(1)
	return e.Engine.GetValues(ctx, keys)
}

// countingStore counts the user reads of the SQLite store.
type countingStore struct {
	*sqlite.Store
	one, many atomic.Int64
}

func (s *countingStore) GetUser(ctx context.Context, appID, id string) (storage.AppUser, error) {
	s.one.Add(1)
	return s.Store.GetUser(ctx, appID, id)
}

func (s *countingStore) GetUsers(ctx context.Context, appID string, ids []string) ([]storage.AppUser, error) {
	s.many.Add(1)
	return s.Store.GetUsers(ctx, appID, ids)
}

// GetUserStandings is the batched user read too (the users' standings alone).
func (s *countingStore) GetUserStandings(ctx context.Context, appID string, ids []string) ([]storage.UserStanding, error) {
	s.many.Add(1)
	return s.Store.GetUserStandings(ctx, appID, ids)
}

type fixedSnapshot struct{ snap Snapshot }

func (f fixedSnapshot) Snapshot(context.Context, string) (Snapshot, error) { return f.snap, nil }

// TestCheckSocketsIsOneRoundPerStore: checking 500 sockets of an app again costs one read
// of the cluster engine and one storage query, not 500 of each, and answers what 500
// CheckSocket calls would.
func TestCheckSocketsIsOneRoundPerStore(t *testing.T) {
	ctx := t.Context()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "kw.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	store := &countingStore{Store: st}
	engine := &countingEngine{Engine: memory.New(memory.Config{})}
	t.Cleanup(func() { engine.Close() })

	now := storage.Now()
	acc := storage.Account{ID: "acc", Username: "owner", Email: "o@example.com", Role: storage.RoleUser, Plan: "business",
		EmailVerified: true, APICallsResetAt: now, CreatedAt: now, UpdatedAt: now}
	if err := st.CreateAccount(ctx, acc); err != nil {
		t.Fatal(err)
	}
	app := storage.App{ID: "app", AccountID: "acc", Name: "App", Enabled: true, SecretHash: "h", CreatedAt: now, UpdatedAt: now}
	if err := st.CreateApp(ctx, app); err != nil {
		t.Fatal(err)
	}
	svc := New(Deps{Store: store, Sessions: engine,
		Apps: fixedSnapshot{Snapshot{App: app, Plan: plans.Plan{Limits: plans.Limits{WebSocketAccess: true}}}}})

	const n = 500
	checks := make([]SocketCheck, n)
	for i := range n {
		u := storage.AppUser{ID: fmt.Sprintf("u%03d", i), AppID: "app", Username: fmt.Sprintf("user%03d", i), Enabled: true,
			Level: 1, DeviceLimit: 1, CreatedAt: now, UpdatedAt: now}
		switch i % 100 {
		case 1:
			u.Banned = true
		case 2:
			u.Enabled = false
		}
		if i%100 != 3 { // user 3 of each hundred was deleted
			if err := st.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
		}
		tok := fmt.Sprintf("token-%03d", i)
		if i%100 != 4 { // session 4 of each hundred has expired
			s := Session{Token: tok, AppID: "app", AccountID: "acc", IP: "192.0.2.1", CreatedAt: now, UserID: u.ID, Username: u.Username}
			if err := svc.sessions.put(ctx, s, time.Hour); err != nil {
				t.Fatal(err)
			}
		}
		checks[i] = SocketCheck{Caller: Caller{IP: "192.0.2.1"}, Token: tok}
	}
	checks[5].Caller.IP = "192.0.2.99" // another address than the session's

	engine.one.Store(0)
	errs := svc.CheckSockets(ctx, "app", checks)
	if got := [4]int64{engine.many.Load(), engine.one.Load(), store.many.Load(), store.one.Load()}; got != [4]int64{1, n / 100, 1, 0} {
		t.Fatalf("engine GetValues %d, GetValue %d (the absent sessions, looked for in their durable copy), store GetUsers or GetUserStandings %d, GetUser %d; want 1, %d, 1, 0",
			got[0], got[1], got[2], got[3], n/100)
	}
	for i, err := range errs {
		one, oneErr := svc.CheckSocket(ctx, checks[i].Caller, checks[i].Token)
		var code, oneCode core.Code
		if err != nil {
			code = core.CodeOf(err)
		}
		if oneErr != nil {
			oneCode = core.CodeOf(oneErr)
		}
		if code != oneCode || (err == nil) != (oneErr == nil) {
			t.Fatalf("socket %d: CheckSockets %v, CheckSocket %v (%+v)", i, err, oneErr, one)
		}
		if want := i%100 == 1 || i%100 == 2 || i%100 == 3 || i%100 == 4 || i == 5; want != (err != nil) {
			t.Fatalf("socket %d: %v", i, err)
		}
	}
}
