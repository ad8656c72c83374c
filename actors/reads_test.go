package actors

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/asynkron/protoactor-go/actor"
)

// gatedRead is a read that counts its runs, answers the number of its run, and waits for
// gate (when set) before answering.
type gatedRead struct {
	runs    atomic.Int32
	started chan int32
	gate    chan struct{}
}

func (g *gatedRead) read(ctx context.Context) (any, error) {
	n := g.runs.Add(1)
	if g.started != nil {
		g.started <- n
	}
	if g.gate != nil {
		select {
		case <-g.gate:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return n, nil
}

func TestReadsOfOneKindShareARun(t *testing.T) {
	dir := NewApps((&fakeApps{version: map[string]int{}}).load, AppsConfig{})
	defer dir.Close()
	g := &gatedRead{started: make(chan int32, 4), gate: make(chan struct{})}
	first := make(chan any, 1)
	go func() {
		v, err := dir.Read(context.Background(), "a", "online", g.read)
		if err != nil {
			t.Error(err)
		}
		first <- v
	}()
	<-g.started // run 1 is under way: the next 20 requests wait for one more run

	// Twenty requests, queued in the actor's mailbox while run 1 is under way (a request
	// future is sent before RequestFuture returns).
	var futures []*actor.Future
	for range 20 {
		f, _, err := dir.send("a", readReq{key: "online", read: g.read}, 5*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		futures = append(futures, f)
	}
	close(g.gate)
	if v := <-first; v != int32(1) {
		t.Fatalf("the first request got run %v, want 1", v)
	}
	for _, f := range futures {
		res, err := f.Result()
		if err != nil {
			t.Fatal(err)
		}
		// Each of them arrived while run 1 was under way, so run 1 may not answer them.
		if r := res.(readReply); r.err != nil || r.val != int32(2) {
			t.Fatalf("a request that arrived during run 1 got run %v (%v), want 2", r.val, r.err)
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
	go func() { _, _ = dir.Read(context.Background(), "a", "sessions", slow.read) }()
	fast := &gatedRead{}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if v, err := dir.Read(ctx, "a", "online", fast.read); err != nil || v != int32(1) {
		t.Fatalf("got %v, %v while another kind of read was under way", v, err)
	}
}

func TestAPanickingReadAnswersAnErrorAndTheActorGoesOn(t *testing.T) {
	dir := NewApps((&fakeApps{version: map[string]int{"a": 1}}).load, AppsConfig{})
	defer dir.Close()
	_, err := dir.Read(context.Background(), "a", "online", func(context.Context) (any, error) { panic("boom") })
	if err == nil || !strings.Contains(err.Error(), "read failed") {
		t.Fatalf("err %v, want the failed read's", err)
	}
	want := errors.New("engine down")
	if _, err := dir.Read(context.Background(), "a", "online", func(context.Context) (any, error) { return nil, want }); !errors.Is(err, want) {
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
	done := make(chan any, 1)
	go func() {
		v, _ := dir.Read(context.Background(), "a", "online", g.read)
		done <- v
	}()
	<-g.started
	time.Sleep(100 * time.Millisecond) // ten idle periods
	close(g.gate)
	select {
	case v := <-done:
		if v != int32(1) {
			t.Fatalf("got %v, want the read's answer", v)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the read was never answered")
	}
}
