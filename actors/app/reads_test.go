package app

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/keyward/keyward/cluster"
)

// gatedRead is a LiveReader whose reads count their runs, answer the number of their run
// (as the online count, or as the length of the session list), and wait for gate (when
// set) before answering.
type gatedRead struct {
	runs    atomic.Int32
	started chan int32
	gate    chan struct{}
}

func (g *gatedRead) run(ctx context.Context) (int, error) {
	n := g.runs.Add(1)
	if g.started != nil {
		g.started <- n
	}
	if g.gate != nil {
		select {
		case <-g.gate:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	return int(n), nil
}

func (g *gatedRead) Count(ctx context.Context, _ string) (int, error) { return g.run(ctx) }
func (g *gatedRead) List(ctx context.Context, _ string) ([]cluster.PresentSocket, error) {
	n, err := g.run(ctx)
	return make([]cluster.PresentSocket, n), err
}
func (g *gatedRead) SocketOf(ctx context.Context, _, _ string) (string, bool, error) {
	n, err := g.run(ctx)
	return "", n > 0, err
}

// liveFuncs is a LiveReader whose count is the given function (a read of another kind fails).
type liveFuncs struct {
	count func(ctx context.Context) (int, error)
}

func (l liveFuncs) Count(ctx context.Context, _ string) (int, error) { return l.count(ctx) }
func (liveFuncs) List(context.Context, string) ([]cluster.PresentSocket, error) {
	return nil, errors.New("no list")
}
func (liveFuncs) SocketOf(context.Context, string, string) (string, bool, error) {
	return "", false, errors.New("no user")
}

var (
	readOnline   = LiveRead{Kind: ReadOnline}
	readSessions = LiveRead{Kind: ReadSessions}
)

func TestReadsOfOneKindShareARun(t *testing.T) {
	dir := NewApps((&fakeApps{version: map[string]int{}}).load, AppsConfig{})
	defer dir.Close()
	g := &gatedRead{started: make(chan int32, 4), gate: make(chan struct{})}
	dir.SetLive(g)
	first := make(chan any, 1)
	go func() {
		v, err := dir.Read(context.Background(), "a", readOnline)
		if err != nil {
			t.Error(err)
		}
		first <- v.Online
	}()
	<-g.started // run 1 is under way: the next 20 requests wait for one more run

	// Twenty requests, queued in the actor's mailbox while run 1 is under way (a request
	// future is sent before RequestFuture returns).
	var futures []*actor.Future
	for range 20 {
		f, _, err := dir.send("a", readReq{q: readOnline}, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		futures = append(futures, f)
	}
	close(g.gate)
	if v := <-first; v != 1 {
		t.Fatalf("the first request got run %v, want 1", v)
	}
	for _, f := range futures {
		res, err := f.Result()
		if err != nil {
			t.Fatal(err)
		}
		// Each of them arrived while run 1 was under way, so run 1 may not answer them.
		if r := res.(readReply); r.err != nil || r.val.Online != 2 {
			t.Fatalf("a request that arrived during run 1 got run %v (%v), want 2", r.val.Online, r.err)
		}
	}
	if n := g.runs.Load(); n != 2 {
		t.Fatalf("%d runs for 21 requests, want 2", n)
	}
}

func TestReadsOfDifferentKindsRunApart(t *testing.T) {
	dir := NewApps((&fakeApps{version: map[string]int{}}).load, AppsConfig{})
	defer dir.Close()
	slow := &gatedRead{gate: make(chan struct{})}
	defer close(slow.gate)
	fast := &gatedRead{}
	dir.SetLive(splitLive{gatedRead: fast, list: slow})
	go func() { _, _ = dir.Read(context.Background(), "a", readSessions) }()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if v, err := dir.Read(ctx, "a", readOnline); err != nil || v.Online != 1 {
		t.Fatalf("got %v, %v while another kind of read was under way", v, err)
	}
}

func TestAPanickingReadAnswersAnErrorAndTheActorGoesOn(t *testing.T) {
	dir := NewApps((&fakeApps{version: map[string]int{"a": 1}}).load, AppsConfig{})
	defer dir.Close()
	dir.SetLive(liveFuncs{count: func(context.Context) (int, error) { panic("boom") }})
	_, err := dir.Read(context.Background(), "a", readOnline)
	if err == nil || !strings.Contains(err.Error(), "read failed") {
		t.Fatalf("err %v, want the failed read's", err)
	}
	want := errors.New("engine down")
	dir.SetLive(liveFuncs{count: func(context.Context) (int, error) { return 0, want }})
	if _, err := dir.Read(context.Background(), "a", readOnline); !errors.Is(err, want) {
		t.Fatalf("err %v, want the read's own", err)
	}
	if v, err := dir.Snapshot(context.Background(), "a"); v != 1 || err != nil {
		t.Fatalf("after a panicking read the actor answered %v, %v", v, err)
	}
}

func TestAnActorWithAReadUnderWayIsNotPassivated(t *testing.T) {
	dir := NewApps((&fakeApps{version: map[string]int{}}).load, AppsConfig{Idle: 10 * time.Millisecond})
	defer dir.Close()
	g := &gatedRead{started: make(chan int32, 1), gate: make(chan struct{})}
	dir.SetLive(g)
	done := make(chan any, 1)
	go func() {
		v, _ := dir.Read(context.Background(), "a", readOnline)
		done <- v.Online
	}()
	<-g.started
	time.Sleep(100 * time.Millisecond) // ten idle periods
	close(g.gate)
	select {
	case v := <-done:
		if v != 1 {
			t.Fatalf("got %v, want the read's answer", v)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the read was never answered")
	}
}

// splitLive counts with its gatedRead and lists with list.
type splitLive struct {
	*gatedRead
	list *gatedRead
}

func (l splitLive) List(ctx context.Context, app string) ([]cluster.PresentSocket, error) {
	return l.list.List(ctx, app)
}
