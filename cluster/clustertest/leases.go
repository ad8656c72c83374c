package clustertest

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/cluster"
)

func acquire(t *testing.T, e cluster.Engine, set, member string, ttl time.Duration, limit int) bool {
	t.Helper()
	ok, err := e.AcquireMember(ctxT(t), set, member, ttl, limit)
	if err != nil {
		t.Fatalf("AcquireMember(%q, %q, %v, %d): %v", set, member, ttl, limit, err)
	}
	return ok
}

// testLeasesBounded: at most limit live leases; a holder renews even when the set is
// full; a released lease makes room; the leases are the set's members.
func testLeasesBounded(t *testing.T, e cluster.Engine) {
	for _, m := range []string{"a", "b", "c"} {
		if !acquire(t, e, "seats", m, longWindow, 3) {
			t.Fatalf("acquire %s under the limit refused", m)
		}
	}
	if acquire(t, e, "seats", "d", longWindow, 3) {
		t.Fatal("a fourth lease of three was admitted")
	}
	wantMembers(t, e, "seats", "a", "b", "c")
	if !acquire(t, e, "seats", "b", longWindow, 3) {
		t.Fatal("a holder's renewal was refused in a full set")
	}
	if ok, err := e.TakeMember(ctxT(t), "seats", "a"); err != nil || !ok {
		t.Fatalf("TakeMember = %v, %v", ok, err)
	}
	if !acquire(t, e, "seats", "d", longWindow, 3) {
		t.Fatal("a released place was not given out")
	}
	wantMembers(t, e, "seats", "b", "c", "d")
	// A lower limit admits nobody new but keeps the holders renewing.
	if acquire(t, e, "seats", "e", longWindow, 2) || !acquire(t, e, "seats", "c", longWindow, 2) {
		t.Fatal("a lowered limit is not applied to newcomers only")
	}
	if _, err := e.AcquireMember(ctxT(t), "seats", "x", longWindow, 0); err == nil {
		t.Fatal("AcquireMember with limit 0 succeeded")
	}
}

// testLeasesExpiryFrees: a lease not renewed frees its place when its ttl runs out.
func testLeasesExpiryFrees(t *testing.T, e cluster.Engine) {
	if !acquire(t, e, "seats", "gone", shortWindow, 1) {
		t.Fatal("first lease refused")
	}
	if acquire(t, e, "seats", "next", longWindow, 1) {
		t.Fatal("admitted over a live lease")
	}
	time.Sleep(shortWindow + margin)
	if !acquire(t, e, "seats", "next", longWindow, 1) {
		t.Fatal("an expired lease still holds its place")
	}
	wantMembers(t, e, "seats", "next")
}

// raceAcquire runs n acquirers of distinct members on the given engines (round robin)
// and answers how many were admitted.
func raceAcquire(t *testing.T, engines []cluster.Engine, set string, n, limit int) int {
	var admitted atomic.Int64
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			ok, err := engines[i%len(engines)].AcquireMember(ctxT(t), set, fmt.Sprintf("m%02d", i), longWindow, limit)
			if err != nil {
				t.Errorf("AcquireMember: %v", err)
			}
			if ok {
				admitted.Add(1)
			}
		}()
	}
	close(start)
	wg.Wait()
	return int(admitted.Load())
}

func testLeasesConcurrent(t *testing.T, e cluster.Engine) {
	if got := raceAcquire(t, []cluster.Engine{e}, "race", 40, 7); got != 7 {
		t.Fatalf("%d of 40 racing acquirers admitted, want exactly 7", got)
	}
	if n := len(members(t, e, "race")); n != 7 {
		t.Fatalf("%d leases held, want 7", n)
	}
}

// testSharedLeases: racing acquirers on two nodes of one backend share the bound.
func testSharedLeases(t *testing.T, a, b cluster.Engine) {
	if got := raceAcquire(t, []cluster.Engine{a, b}, "shared-race", 40, 7); got != 7 {
		t.Fatalf("%d of 40 acquirers on two nodes admitted, want exactly 7", got)
	}
	wantCount := len(members(t, b, "shared-race"))
	if wantCount != 7 {
		t.Fatalf("node b sees %d leases, want 7", wantCount)
	}
}
