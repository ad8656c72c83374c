package usage_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/cluster"
	clustermemory "github.com/keyward/keyward/cluster/memory"
	clusterredis "github.com/keyward/keyward/cluster/redis"
	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/plans"
	"github.com/keyward/keyward/core/usage"
	"github.com/keyward/keyward/internal/testenv"
	"github.com/keyward/keyward/storage"
	storagemongo "github.com/keyward/keyward/storage/mongo"
	storagesqlite "github.com/keyward/keyward/storage/sqlite"
)

type engines struct {
	name  string
	store func(t *testing.T) storage.Store
	// cluster opens an engine; calls with the same t share state (two nodes).
	cluster func(t *testing.T) cluster.Engine
}

func pairs() []engines {
	return []engines{
		{name: "sqlite+memory",
			store: func(t *testing.T) storage.Store {
				s, err := storagesqlite.Open(context.Background(), storagesqlite.Config{Path: filepath.Join(t.TempDir(), "kw.db")})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				return s
			},
			cluster: func() func(t *testing.T) cluster.Engine {
				var shared sync.Map // one memory engine per test, shared by its "nodes"
				return func(t *testing.T) cluster.Engine {
					e, loaded := shared.LoadOrStore(t.Name(), clustermemory.New(clustermemory.Config{}))
					if !loaded {
						t.Cleanup(func() { _ = e.(cluster.Engine).Close() })
					}
					return e.(cluster.Engine)
				}
			}()},
		{name: "mongo+redis",
			store: func(t *testing.T) storage.Store {
				s, err := storagemongo.Open(context.Background(), storagemongo.Config{URI: testenv.MongoURI(t), Database: testenv.UniqueName("kwtest_")})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = s.Close() })
				return s
			},
			cluster: func() func(t *testing.T) cluster.Engine {
				var prefixes sync.Map
				return func(t *testing.T) cluster.Engine {
					p, _ := prefixes.LoadOrStore(t.Name(), testenv.UniqueName("kwtest:")+":")
					e, err := clusterredis.New(context.Background(), clusterredis.Config{URL: testenv.RedisURL(t), Prefix: p.(string)})
					if err != nil {
						t.Fatal(err)
					}
					t.Cleanup(func() { _ = e.Close() })
					return e
				}
			}()},
	}
}

type clock struct{ offset atomic.Int64 }

func (c *clock) now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

func newAccount(t *testing.T, s storage.Store, plan string) storage.Account {
	t.Helper()
	now := storage.Now()
	a := storage.Account{ID: testenv.UniqueName("acct-"), Username: testenv.UniqueName("u"), Email: testenv.UniqueName("e") + "@example.com",
		Role: "user", Plan: plan, APIKeyHash: testenv.UniqueName("k"), APICallsResetAt: usage.PeriodEnd(now), CreatedAt: now, UpdatedAt: now}
	if err := s.CreateAccount(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	return a
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestQuotaAndFlush(t *testing.T) {
	catalogue, _ := plans.New(plans.Config{})
	for _, p := range pairs() {
		t.Run(p.name, func(t *testing.T) {
			ctx := context.Background()
			store := p.store(t)
			clk := &clock{}
			// Two nodes: two meters on one store and one cluster engine.
			a := usage.New(p.cluster(t), store, catalogue, usage.Config{Now: clk.now}, quiet())
			b := usage.New(p.cluster(t), store, catalogue, usage.Config{Now: clk.now}, quiet())
			acct := newAccount(t, store, plans.Free) // 2500 calls a month

			for i := 0; i < 1200; i++ {
				if err := a.Count(ctx, acct.ID); err != nil {
					t.Fatalf("call %d: %v", i, err)
				}
			}
			if err := a.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			got, _ := store.GetAccount(ctx, acct.ID)
			if got.APICallsUsed != 1200 {
				t.Fatalf("stored %d after flush, want 1200", got.APICallsUsed)
			}
			// Node b counts on top of what a flushed, and both see the pending calls of the other.
			for i := 0; i < 1299; i++ {
				node := []*usage.Meter{a, b}[i%2]
				if err := node.Count(ctx, acct.ID); err != nil {
					t.Fatalf("call %d: %v", 1200+i, err)
				}
			}
			if err := b.Count(ctx, acct.ID); err != nil {
				t.Fatalf("call 2500: %v", err)
			}
			err := a.Count(ctx, acct.ID)
			if core.CodeOf(err) != core.CodeQuotaExceeded {
				t.Fatalf("call 2501: %v", err)
			}
			if err := b.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			got, _ = store.GetAccount(ctx, acct.ID)
			if got.APICallsUsed != 2500 {
				t.Fatalf("stored %d, want 2500 (a refused call is not counted)", got.APICallsUsed)
			}
			if err := b.Count(ctx, acct.ID); core.CodeOf(err) != core.CodeQuotaExceeded {
				t.Fatalf("after flush: %v", err)
			}

			// A new month starts from zero.
			clk.offset.Store(int64(time.Until(got.APICallsResetAt) + time.Hour))
			if err := a.Count(ctx, acct.ID); err != nil {
				t.Fatalf("first call of the new month: %v", err)
			}
			if err := a.Close(ctx); err != nil {
				t.Fatal(err)
			}
			got, _ = store.GetAccount(ctx, acct.ID)
			if got.APICallsUsed != 1 || !got.APICallsResetAt.After(clk.now()) {
				t.Fatalf("new month: used %d, reset at %v", got.APICallsUsed, got.APICallsResetAt)
			}
			_ = b.Close(ctx)
		})
	}
}

func TestFlusherRunsAndStops(t *testing.T) {
	catalogue, _ := plans.New(plans.Config{})
	p := pairs()[0]
	store := p.store(t)
	m := usage.New(p.cluster(t), store, catalogue, usage.Config{FlushInterval: 20 * time.Millisecond}, quiet())
	ctx, stop := context.WithCancel(context.Background())
	ran := make(chan error, 1)
	go func() { ran <- m.Run(ctx) }()
	acct := newAccount(t, store, plans.Pro)
	for i := 0; i < 5; i++ {
		if err := m.Count(context.Background(), acct.ID); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got, _ := store.GetAccount(context.Background(), acct.ID)
		if got.APICallsUsed == 5 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not flushed: %d", got.APICallsUsed)
		}
		time.Sleep(10 * time.Millisecond)
	}
	stop()
	if err := <-ran; err != nil {
		t.Fatal("Run:", err)
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := m.Close(context.Background()); err != nil {
		t.Fatal("second close:", err)
	}
}

func TestUnknownAccountIsAnError(t *testing.T) {
	catalogue, _ := plans.New(plans.Config{})
	p := pairs()[0]
	m := usage.New(p.cluster(t), p.store(t), catalogue, usage.Config{}, quiet())
	if err := m.Count(context.Background(), "nope"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("err %v", err)
	}
}

func TestPeriodEnd(t *testing.T) {
	for in, want := range map[string]string{
		"2026-01-31T23:59:59Z": "2026-02-01T00:00:00Z",
		"2026-12-15T10:00:00Z": "2027-01-01T00:00:00Z",
		"2026-03-01T00:00:00Z": "2026-04-01T00:00:00Z",
	} {
		at, _ := time.Parse(time.RFC3339, in)
		if got := usage.PeriodEnd(at).Format(time.RFC3339); got != want {
			t.Fatalf("%s: %s, want %s", in, got, want)
		}
	}
}

// TestCountsWithoutStorage: once an account's figures are loaded, counting its calls needs
// the cluster engine only: with the store closed (storage down), calls are still counted
// and checked across flushes, and a flush that cannot write keeps the counts for later.
func TestCountsWithoutStorage(t *testing.T) {
	catalogue, _ := plans.New(plans.Config{})
	p := pairs()[0]
	store := p.store(t)
	engine := p.cluster(t)
	m := usage.New(engine, store, catalogue, usage.Config{}, quiet())
	acct := newAccount(t, store, plans.Free)
	ctx := context.Background()
	if err := m.Count(ctx, acct.ID); err != nil {
		t.Fatal(err)
	}
	if err := m.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if err := store.Close(); err != nil {
		t.Fatal(err)
	}
	for round := range 3 {
		for i := range 10 {
			if err := m.Count(ctx, acct.ID); err != nil {
				t.Fatalf("round %d, call %d with storage down: %v", round, i, err)
			}
		}
		if err := m.Flush(ctx); err == nil {
			t.Fatal("a flush with storage down reported no error")
		}
	}
	counts, err := engine.TakeCounts(ctx, "apicalls")
	if err != nil || counts[acct.ID] != 30 {
		t.Fatalf("pending calls kept for a later flush: %v %v", counts, err)
	}
}
