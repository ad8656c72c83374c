package client

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/sqlite"
)

// gatedStandings is a real store whose standing reads are recorded and, while gate is
// set, held until it closes.
type gatedStandings struct {
	storage.Store
	mu      sync.Mutex
	calls   [][]string
	entered chan struct{} // closed when the first held read is reached
	gate    chan struct{}
	fail    error
}

func (g *gatedStandings) GetUserStandings(ctx context.Context, appID string, ids []string) ([]storage.UserStanding, error) {
	g.mu.Lock()
	g.calls = append(g.calls, slices.Clone(ids))
	gate, fail := g.gate, g.fail
	if gate != nil && g.entered != nil {
		close(g.entered)
		g.entered = nil
	}
	g.mu.Unlock()
	if gate != nil {
		<-gate
	}
	if fail != nil {
		return nil, fail
	}
	return g.Store.GetUserStandings(ctx, appID, ids)
}

func (g *gatedStandings) callsSoFar() [][]string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.calls)
}

// standingsStore opens a SQLite store with app "app" and users u0..u(n-1); u1 is banned.
func standingsStore(t *testing.T, n int) storage.Store {
	t.Helper()
	ctx := t.Context()
	st, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "s.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	if err := st.CreateApp(ctx, storage.App{ID: "app", AccountID: "acc", Name: "App", CreatedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		u := storage.AppUser{ID: fmt.Sprintf("u%d", i), AppID: "app", Username: fmt.Sprintf("user%d", i), Enabled: true,
			Banned: i == 1, CreatedAt: time.Now()}
		if err := st.CreateUser(ctx, u); err != nil {
			t.Fatal(err)
		}
	}
	return st
}

// waitGathered waits until n ids wait for app's next read.
func waitGathered(t *testing.T, r *standingReads, app string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		r.mu.Lock()
		got := 0
		if a := r.apps[app]; a != nil && a.next != nil {
			got = len(a.next.ids)
		}
		r.mu.Unlock()
		if got == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d ids gathered, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestStandingReadsGatherWhileOneIsUnderWay: reads that come while one is under way are
// made together, in one query, as soon as it ends; each caller gets its own user's
// standing (or none), and a read with no other under way is made at once, alone.
func TestStandingReadsGatherWhileOneIsUnderWay(t *testing.T) {
	entered := make(chan struct{})
	g := &gatedStandings{Store: standingsStore(t, 6), gate: make(chan struct{}), entered: entered}
	var r standingReads
	ctx := t.Context()
	type answer struct {
		id  string
		u   storage.UserStanding
		ok  bool
		err error
	}
	answers := make(chan answer, 8)
	read := func(id string) {
		u, ok, err := r.read(ctx, g, "app", id)
		answers <- answer{id, u, ok, err}
	}
	go read("u0")
	<-entered // u0's read is under way
	waiting := []string{"u1", "u2", "u3", "gone"}
	for _, id := range waiting {
		go read(id)
	}
	waitGathered(t, &r, "app", len(waiting))
	g.mu.Lock()
	gate := g.gate
	g.gate = nil
	g.mu.Unlock()
	close(gate)
	got := map[string]answer{}
	for range 1 + len(waiting) {
		a := <-answers
		got[a.id] = a
	}
	for _, id := range []string{"u0", "u1", "u2", "u3"} {
		a := got[id]
		if a.err != nil || !a.ok || a.u.ID != id || a.u.Username != "user"+id[1:] {
			t.Fatalf("%s: %+v", id, a)
		}
	}
	if !got["u1"].u.Banned || got["u2"].u.Banned {
		t.Fatalf("standings mixed up: u1 %+v, u2 %+v", got["u1"].u, got["u2"].u)
	}
	if a := got["gone"]; a.err != nil || a.ok {
		t.Fatalf("a user that does not exist: %+v", a)
	}
	calls := g.callsSoFar()
	if len(calls) != 2 || !slices.Equal(calls[0], []string{"u0"}) {
		t.Fatalf("queries %v, want [u0] then the four gathered", calls)
	}
	second := slices.Sorted(slices.Values(calls[1]))
	if !slices.Equal(second, []string{"gone", "u1", "u2", "u3"}) {
		t.Fatalf("the gathered query read %v", calls[1])
	}
	// Nothing under way: read at once, alone, and the app's state is gone.
	if u, ok, err := r.read(ctx, g, "app", "u4"); err != nil || !ok || u.ID != "u4" {
		t.Fatalf("a read alone: %+v %v %v", u, ok, err)
	}
	if calls := g.callsSoFar(); len(calls) != 3 || !slices.Equal(calls[2], []string{"u4"}) {
		t.Fatalf("queries %v", calls)
	}
	r.mu.Lock()
	left := len(r.apps)
	r.mu.Unlock()
	if left != 0 {
		t.Fatalf("%d apps' read states left behind", left)
	}
}

// TestStandingReadsShareAnErrorButNotACancel: a gathered read that fails answers its
// error to every caller in it (and only to them); a caller whose context ends stops
// waiting, and the others still get their answers.
func TestStandingReadsShareAnErrorButNotACancel(t *testing.T) {
	for _, failing := range []bool{false, true} {
		t.Run(fmt.Sprintf("failing=%v", failing), func(t *testing.T) {
			entered := make(chan struct{})
			g := &gatedStandings{Store: standingsStore(t, 4), gate: make(chan struct{}), entered: entered}
			var r standingReads
			reading := func(ctx context.Context, id string) chan error {
				done := make(chan error, 1)
				go func() {
					_, ok, err := r.read(ctx, g, "app", id)
					if err == nil && !ok {
						err = fmt.Errorf("%s not found", id)
					}
					done <- err
				}()
				return done
			}
			first := reading(t.Context(), "u0")
			<-entered
			lead := reading(t.Context(), "u2")
			waitGathered(t, &r, "app", 1)
			follower := reading(t.Context(), "u1")
			waitGathered(t, &r, "app", 2)
			cctx, cancel := context.WithCancel(t.Context())
			gaveUp := reading(cctx, "u3")
			waitGathered(t, &r, "app", 3)
			cancel()
			if err := <-gaveUp; !errors.Is(err, context.Canceled) {
				t.Fatalf("a caller that gave up: %v", err)
			}
			boom := errors.New("store down")
			g.mu.Lock()
			if failing {
				g.fail = boom
			}
			gate := g.gate
			g.gate = nil
			g.mu.Unlock()
			close(gate)
			err0, err2, err1 := <-first, <-lead, <-follower
			if err0 != nil {
				t.Fatalf("the read under way (not gathered): %v", err0)
			}
			if failing {
				if !errors.Is(err2, boom) || !errors.Is(err1, boom) {
					t.Fatalf("errors %v, %v; want the store's", err2, err1)
				}
				return
			}
			if err2 != nil || err1 != nil {
				t.Fatalf("errors %v, %v", err2, err1)
			}
		})
	}
}

// panickyStandings panics in its first standing read while gate is held, then reads.
type panickyStandings struct {
	storage.Store
	entered, gate chan struct{}
	once          sync.Once
}

func (p *panickyStandings) GetUserStandings(ctx context.Context, appID string, ids []string) ([]storage.UserStanding, error) {
	first := false
	p.once.Do(func() { first = true })
	if first {
		close(p.entered)
		<-p.gate
		panic("store blew up")
	}
	return p.Store.GetUserStandings(ctx, appID, ids)
}

// TestStandingReadsSurviveAPanickingStore: a store that panics in a read under way still
// hands the turn to the batch gathered meanwhile (which reads and answers), and the app's
// reads go on afterwards; nothing waits for good.
func TestStandingReadsSurviveAPanickingStore(t *testing.T) {
	p := &panickyStandings{Store: standingsStore(t, 3), entered: make(chan struct{}), gate: make(chan struct{})}
	var r standingReads
	panicked := make(chan any, 1)
	go func() {
		defer func() { panicked <- recover() }()
		_, _, _ = r.read(t.Context(), p, "app", "u0")
	}()
	<-p.entered
	got := make(chan error, 1)
	go func() {
		u, ok, err := r.read(t.Context(), p, "app", "u2")
		if err == nil && (!ok || u.ID != "u2") {
			err = fmt.Errorf("u2: %+v %v", u, ok)
		}
		got <- err
	}()
	waitGathered(t, &r, "app", 1)
	close(p.gate)
	if v := <-panicked; v == nil {
		t.Fatal("the store's panic did not reach its caller")
	}
	select {
	case err := <-got:
		if err != nil {
			t.Fatalf("the gathered read after a panic: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the gathered read waited for good after the read under way panicked")
	}
	if u, ok, err := r.read(t.Context(), p, "app", "u0"); err != nil || !ok || u.ID != "u0" {
		t.Fatalf("a read after the panic: %+v %v %v", u, ok, err)
	}
}
