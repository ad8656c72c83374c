package memory_test

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/cluster/clustertest"
	"github.com/keyward/keyward/cluster/memory"
)

func TestConformance(t *testing.T) {
	clustertest.Run(t, func(t *testing.T) cluster.Engine {
		e := memory.New(memory.Config{})
		t.Cleanup(func() { _ = e.Close() })
		return e
	})
}

// TestConformanceShared runs the two-node subtests on one engine given twice: a memory
// engine is a single node, so the subtests that need two are skipped.
func TestConformanceShared(t *testing.T) {
	clustertest.RunShared(t, func(t *testing.T) (cluster.Engine, cluster.Engine) {
		e := memory.New(memory.Config{})
		t.Cleanup(func() { _ = e.Close() })
		return e, e
	})
}

// TestConformanceWithJanitor runs the suite with a janitor sweeping every few milliseconds,
// so sweeps race with every operation under -race and must never change an answer.
func TestConformanceWithJanitor(t *testing.T) {
	clustertest.Run(t, func(t *testing.T) cluster.Engine {
		e := memory.New(memory.Config{SweepInterval: 5 * time.Millisecond})
		t.Cleanup(func() { _ = e.Close() })
		return e
	})
}

func BenchmarkAllow(b *testing.B) {
	e := memory.New(memory.Config{})
	defer e.Close()
	clustertest.BenchmarkAllow(b, e)
}

func BenchmarkPresenceAdmit(b *testing.B) {
	e := memory.New(memory.Config{})
	defer e.Close()
	clustertest.BenchmarkPresenceAdmit(b, e)
}

// fakeClock is a clock tests move by hand; the mutex lets the janitor read it.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newFake(t *testing.T) (*memory.Engine, *fakeClock) {
	clock := &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	e := memory.New(memory.Config{Now: clock.Now, SweepInterval: -1})
	t.Cleanup(func() { _ = e.Close() })
	return e, clock
}

// TestWindowBoundary pins the boundary with a fake clock: a hit counts while now-h < window,
// and RetryAfter is exactly the time until the oldest hit leaves.
func TestWindowBoundary(t *testing.T) {
	e, clock := newFake(t)
	ctx := context.Background()
	w := 10 * time.Second
	for range 2 {
		if d, _ := e.Allow(ctx, "k", 2, w); !d.Allowed {
			t.Fatal("refused")
		}
		clock.Advance(time.Second)
	}
	// Hits at 0s and 1s; now 2s.
	d, _ := e.Allow(ctx, "k", 2, w)
	if d.Allowed || d.RetryAfter != 8*time.Second {
		t.Fatalf("at 2s: %+v, want refused with RetryAfter 8s", d)
	}
	clock.Advance(8*time.Second - time.Nanosecond)
	if d, _ := e.Allow(ctx, "k", 2, w); d.Allowed || d.RetryAfter != time.Nanosecond {
		t.Fatalf("1ns before: %+v, want refused with RetryAfter 1ns", d)
	}
	clock.Advance(time.Nanosecond)
	if d, _ := e.Allow(ctx, "k", 2, w); !d.Allowed || d.Remaining != 0 {
		t.Fatalf("at 10s: %+v, want allowed with Remaining 0", d)
	}
}

// TestLimitChange: however many hits a key takes, its ring never holds more than `limit`
// slots, and a changed limit keeps decisions exact.
func TestLimitChange(t *testing.T) {
	e, clock := newFake(t)
	ctx := context.Background()
	w := time.Minute
	for i := range 1000 {
		d, _ := e.Allow(ctx, "k", 5, w)
		if d.Allowed != (i < 5) {
			t.Fatalf("hit %d: allowed %v", i, d.Allowed)
		}
		clock.Advance(time.Millisecond)
	}
	if got := e.RingCap("k"); got != 5 {
		t.Fatalf("ring capacity after 1000 hits = %d, want 5", got)
	}
	// A generous limit costs memory only as hits arrive.
	const generous = 1 << 40
	for i := range 3 {
		if d, _ := e.Allow(ctx, "generous", generous, w); !d.Allowed || d.Remaining != generous-i-1 {
			t.Fatalf("generous limit, hit %d: %+v", i, d)
		}
	}
	if got := e.RingCap("generous"); got > 4 {
		t.Fatalf("ring capacity after 3 hits with a huge limit = %d, want at most 4", got)
	}
	// Lowering the limit keeps the newest hits: 5 stored > 3, still refused.
	if d, _ := e.Allow(ctx, "k", 3, w); d.Allowed {
		t.Fatal("allowed after lowering the limit below the stored count")
	}
	// Raising it again: only 3 hits were kept, so 7-3 = 4 more are allowed.
	for i := range 4 {
		if d, _ := e.Allow(ctx, "k", 7, w); !d.Allowed || d.Remaining != 7-3-i-1 {
			t.Fatalf("raised limit, hit %d: %+v", i, d)
		}
	}
	if d, _ := e.Allow(ctx, "k", 7, w); d.Allowed {
		t.Fatal("allowed over the raised limit")
	}
}

func TestSweepDropsOnlyExpired(t *testing.T) {
	e, clock := newFake(t)
	ctx := context.Background()
	mustAllow := func(key string, w time.Duration) {
		t.Helper()
		if d, err := e.Allow(ctx, key, 1, w); err != nil || !d.Allowed {
			t.Fatalf("Allow(%q) = %+v, %v", key, d, err)
		}
	}
	mustAllow("short", time.Second)
	mustAllow("long", time.Hour)
	if err := e.PutToken(ctx, "tshort", "v", time.Second); err != nil {
		t.Fatal(err)
	}
	if err := e.PutToken(ctx, "tlong", "v", time.Hour); err != nil {
		t.Fatal(err)
	}
	if got := e.Len(); got != 4 {
		t.Fatalf("Len = %d before sweep, want 4", got)
	}
	clock.Advance(time.Second)
	e.Sweep()
	if got := e.Len(); got != 2 {
		t.Fatalf("Len = %d after sweep, want 2 (the long-lived entries)", got)
	}
	// The survivors still answer as before.
	if d, _ := e.Allow(ctx, "long", 1, time.Hour); d.Allowed {
		t.Error("long limiter key forgot its hit")
	}
	if _, ok, _ := e.TakeToken(ctx, "tlong"); !ok {
		t.Error("long token lost")
	}
	mustAllow("short", time.Second)
}

// TestJanitor: Close returns only after the janitor goroutine has returned, and
// the janitor really sweeps while running.
func TestJanitor(t *testing.T) {
	clock := &fakeClock{t: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}
	e := memory.New(memory.Config{Now: clock.Now, SweepInterval: time.Millisecond})
	ctx := context.Background()
	if err := e.PutToken(ctx, "t", "v", time.Second); err != nil {
		t.Fatal(err)
	}
	clock.Advance(time.Hour)
	deadline := time.Now().Add(30 * time.Second)
	for e.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("janitor never swept the expired token")
		}
		time.Sleep(time.Millisecond)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if err := e.Ping(ctx); !errors.Is(err, cluster.ErrUnavailable) {
		t.Fatalf("Ping after Close = %v", err)
	}
}

// TestValuesBoundary pins value expiry with a fake clock: a value is live while now is
// before its expiry, GetValue answers exactly the time left, and a touch restarts it.
func TestValuesBoundary(t *testing.T) {
	e, clock := newFake(t)
	ctx := context.Background()
	if err := e.SetValue(ctx, "k", []byte("v"), 10*time.Second); err != nil {
		t.Fatal(err)
	}
	clock.Advance(4 * time.Second)
	if _, ttl, ok, _ := e.GetValue(ctx, "k"); !ok || ttl != 6*time.Second {
		t.Fatalf("at 4s: ok %v, ttl %v; want 6s left", ok, ttl)
	}
	if ok, _ := e.TouchValue(ctx, "k", 10*time.Second); !ok {
		t.Fatal("touch at 4s failed")
	}
	clock.Advance(10*time.Second - time.Nanosecond)
	if _, ttl, ok, _ := e.GetValue(ctx, "k"); !ok || ttl != time.Nanosecond {
		t.Fatalf("1ns before expiry: ok %v, ttl %v", ok, ttl)
	}
	clock.Advance(time.Nanosecond)
	if _, _, ok, _ := e.GetValue(ctx, "k"); ok {
		t.Fatal("value live at its expiry")
	}
	if ok, _ := e.TouchValue(ctx, "k", time.Hour); ok {
		t.Fatal("touch revived an expired value")
	}
}

// TestSetsBoundaryAndTies pins member expiry with a fake clock, and eviction among members
// that expire at the same instant: by member, as Redis orders equal scores.
func TestSetsBoundaryAndTies(t *testing.T) {
	e, clock := newFake(t)
	ctx := context.Background()
	for _, m := range []string{"c", "a", "b"} {
		if err := e.AddMember(ctx, "s", m, 10*time.Second, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.AddMember(ctx, "s", "d", 10*time.Second, 2); err != nil {
		t.Fatal(err)
	}
	got, _ := e.Members(ctx, "s")
	slices.Sort(got)
	if !slices.Equal(got, []string{"c", "d"}) {
		t.Fatalf("after evicting ties: %q, want [c d]", got)
	}
	if e.SetLen("s") != 2 {
		t.Fatalf("evicted members still held: %d", e.SetLen("s"))
	}
	clock.Advance(10*time.Second - time.Nanosecond)
	if n, _ := e.CountMembers(ctx, "s"); n != 2 {
		t.Fatalf("1ns before expiry: %d members, want 2", n)
	}
	clock.Advance(time.Nanosecond)
	if n, _ := e.CountMembers(ctx, "s"); n != 0 {
		t.Fatalf("at expiry: %d members, want 0", n)
	}
	if ok, _ := e.TakeMember(ctx, "s", "c"); ok {
		t.Fatal("took an expired member")
	}
	if got := e.Len(); got != 0 {
		t.Fatalf("Len = %d after every member expired, want 0 (the set is forgotten)", got)
	}
}

// TestSweepDropsValuesAndSets: the janitor's sweep frees expired values and members, and
// sets left empty, without touching live ones.
func TestSweepDropsValuesAndSets(t *testing.T) {
	e, clock := newFake(t)
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(e.SetValue(ctx, "vshort", []byte("v"), time.Second))
	must(e.SetValue(ctx, "vlong", []byte("v"), time.Hour))
	must(e.AddMember(ctx, "sshort", "m", time.Second, 0))
	must(e.AddMember(ctx, "mixed", "short", time.Second, 0))
	must(e.AddMember(ctx, "mixed", "long", time.Hour, 0))
	if got := e.Len(); got != 4 { // a set counts once
		t.Fatalf("Len = %d before sweep, want 4", got)
	}
	clock.Advance(time.Second)
	e.Sweep()
	if got := e.Len(); got != 2 {
		t.Fatalf("Len = %d after sweep, want 2 (vlong and mixed)", got)
	}
	if got := e.SetLen("mixed"); got != 1 {
		t.Fatalf("mixed holds %d members after sweep, want 1", got)
	}
	if _, _, ok, _ := e.GetValue(ctx, "vlong"); !ok {
		t.Error("long value lost")
	}
	if ok, _ := e.TakeMember(ctx, "mixed", "long"); !ok {
		t.Error("long member lost")
	}
}

// TestCloseStopsGoroutines: Close stops the janitor and the bus goroutine, also with
// subscribers still subscribed and messages queued.
func TestCloseStopsGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	e := memory.New(memory.Config{SweepInterval: time.Millisecond})
	ctx := context.Background()
	block := make(chan struct{})
	called := make(chan struct{}, 1)
	if _, err := e.Subscribe(ctx, "t", func([]byte) {
		select {
		case called <- struct{}{}:
		default:
		}
		<-block
	}); err != nil {
		t.Fatal(err)
	}
	for range 10 {
		if err := e.Publish(ctx, "t", []byte("m")); err != nil {
			t.Fatal(err)
		}
	}
	<-called
	closed := make(chan struct{})
	go func() {
		_ = e.Close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("Close returned while a callback was still running")
	case <-time.After(50 * time.Millisecond):
	}
	close(block)
	<-closed
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after Close, %d before New", runtime.NumGoroutine(), before)
		}
		time.Sleep(time.Millisecond)
	}
}

// A set is held without a map while it has one member; it must behave the same through
// every change of shape: one member, a second, back to one, expiry of the only member.
func TestSetOfOneMemberChangesShape(t *testing.T) {
	e, clock := newFake(t)
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	members := func() []string {
		t.Helper()
		m, err := e.Members(ctx, "s")
		must(err)
		slices.Sort(m)
		return m
	}
	must(e.AddMember(ctx, "s", "a", time.Minute, 0))
	must(e.AddMember(ctx, "s", "a", 2*time.Minute, 0)) // renews, still one member
	if got := members(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("one member: %v", got)
	}
	if took, err := e.TakeMember(ctx, "s", "b"); err != nil || took {
		t.Fatalf("take of a member not there: %v, %v", took, err)
	}
	must(e.AddMember(ctx, "s", "b", time.Minute, 0))
	if got := members(); !slices.Equal(got, []string{"a", "b"}) {
		t.Fatalf("two members: %v", got)
	}
	clock.Advance(time.Minute) // b expires, a (renewed to 2 min) stays
	if n, err := e.CountMembers(ctx, "s"); err != nil || n != 1 {
		t.Fatalf("after b expired: %d, %v", n, err)
	}
	if took, err := e.TakeMember(ctx, "s", "a"); err != nil || !took {
		t.Fatalf("take a: %v, %v", took, err)
	}
	if n := e.Len(); n != 0 {
		t.Fatalf("the empty set is kept: %d entries", n)
	}
	// One member, then its expiry: the set goes.
	must(e.AddMember(ctx, "s", "c", time.Minute, 0))
	if ok, err := e.AcquireMember(ctx, "s", "d", time.Minute, 1); err != nil || ok {
		t.Fatalf("acquire beyond the limit of one: %v, %v", ok, err)
	}
	clock.Advance(time.Minute)
	if ok, err := e.AcquireMember(ctx, "s", "d", time.Minute, 1); err != nil || !ok {
		t.Fatalf("acquire once c expired: %v, %v", ok, err)
	}
	if got := members(); !slices.Equal(got, []string{"d"}) {
		t.Fatalf("after c expired: %v", got)
	}
	clock.Advance(time.Minute)
	e.Sweep()
	if n := e.Len(); n != 0 {
		t.Fatalf("the expired set is kept after a sweep: %d entries", n)
	}
}
