package clustertest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/cluster"
)

func addMember(t *testing.T, e cluster.Engine, set, member string, ttl time.Duration, limit int) {
	t.Helper()
	if err := e.AddMember(ctxT(t), set, member, ttl, limit); err != nil {
		t.Fatalf("AddMember(%q, %q, %v, %d): %v", set, member, ttl, limit, err)
	}
}

// members answers the live members, sorted, after checking that CountMembers agrees.
func members(t *testing.T, e cluster.Engine, set string) []string {
	t.Helper()
	m, err := e.Members(ctxT(t), set)
	if err != nil {
		t.Fatalf("Members(%q): %v", set, err)
	}
	n, err := e.CountMembers(ctxT(t), set)
	if err != nil {
		t.Fatalf("CountMembers(%q): %v", set, err)
	}
	if n != len(m) {
		t.Errorf("CountMembers(%q) = %d, Members answered %d: %q", set, n, len(m), m)
	}
	slices.Sort(m)
	return m
}

func wantMembers(t *testing.T, e cluster.Engine, set string, want ...string) {
	t.Helper()
	slices.Sort(want)
	if got := members(t, e, set); !slices.Equal(got, want) {
		t.Fatalf("Members(%q) = %q, want %q", set, got, want)
	}
}

func takeMember(t *testing.T, e cluster.Engine, set, member string) bool {
	t.Helper()
	ok, err := e.TakeMember(ctxT(t), set, member)
	if err != nil {
		t.Fatalf("TakeMember(%q, %q): %v", set, member, err)
	}
	return ok
}

// testSetsAddTake: members are added once however often, taken once, and sets do not share
// members.
func testSetsAddTake(t *testing.T, e cluster.Engine) {
	wantMembers(t, e, "user:u1")
	if takeMember(t, e, "user:u1", "a") {
		t.Fatal("TakeMember from an empty set = true")
	}
	odd := "ключ {x} *\x00"
	for _, m := range []string{"a", "b", "c", odd, ""} {
		addMember(t, e, "user:u1", m, time.Minute, 0)
	}
	addMember(t, e, "user:u1", "a", time.Minute, 0) // again: still one member
	addMember(t, e, "user:u2", "a", time.Minute, 0)
	wantMembers(t, e, "user:u1", "a", "b", "c", odd, "")
	if !takeMember(t, e, "user:u1", "b") {
		t.Fatal("TakeMember(live) = false")
	}
	if takeMember(t, e, "user:u1", "b") {
		t.Fatal("second TakeMember = true")
	}
	if takeMember(t, e, "user:u1", "zz") {
		t.Fatal("TakeMember(never added) = true")
	}
	if !takeMember(t, e, "user:u1", odd) || !takeMember(t, e, "user:u1", "") {
		t.Fatal("TakeMember of unusual members = false")
	}
	wantMembers(t, e, "user:u1", "a", "c")
	if !takeMember(t, e, "user:u1", "a") {
		t.Fatal("TakeMember(a) = false")
	}
	wantMembers(t, e, "user:u2", "a") // another set's a is its own
	for _, set := range []string{"user:u", "user:u1:", "user:u11"} {
		wantMembers(t, e, set)
	}
}

// testSetsExpiry: each member expires on its own ttl, and expired members are answered by
// no method; once all have expired the set is empty.
func testSetsExpiry(t *testing.T, e cluster.Engine) {
	ttl := 300 * time.Millisecond
	start := time.Now()
	addMember(t, e, "s", "short", ttl, 0)
	addMember(t, e, "s", "short-take", ttl, 0)
	addMember(t, e, "s", "long", time.Minute, 0)
	got := members(t, e, "s")
	if time.Since(start) < ttl-margin {
		if want := []string{"long", "short", "short-take"}; !slices.Equal(got, want) {
			t.Fatalf("Members before the ttl = %q, want %q", got, want)
		}
	} else {
		t.Logf("machine too slow to check members inside a %v ttl; skipped", ttl)
	}
	sleepUntil(start.Add(ttl + margin))
	wantMembers(t, e, "s", "long")
	if takeMember(t, e, "s", "short-take") {
		t.Fatal("TakeMember(expired) = true")
	}
	if !takeMember(t, e, "s", "long") {
		t.Fatal("TakeMember(live) = false")
	}
	wantMembers(t, e, "s")

	// Every member expired: the set is empty, and starts over as a new one.
	addMember(t, e, "gone", "a", ttl, 0)
	addMember(t, e, "gone", "b", ttl, 0)
	sleepUntil(time.Now().Add(ttl + margin))
	wantMembers(t, e, "gone")
	addMember(t, e, "gone", "c", time.Minute, 1)
	wantMembers(t, e, "gone", "c")
}

// testSetsReAddSetsTTL: adding a member already there gives it the new ttl, longer or
// shorter.
func testSetsReAddSetsTTL(t *testing.T, e cluster.Engine) {
	short := 200 * time.Millisecond
	addMember(t, e, "s", "extended", short, 0)
	addMember(t, e, "s", "extended", time.Minute, 0)
	addMember(t, e, "s", "shortened", time.Minute, 0)
	addMember(t, e, "s", "shortened", short, 0)
	time.Sleep(short + margin)
	wantMembers(t, e, "s", "extended")
}

// testSetsLimit: over the limit, the members that expire soonest go, never the one just
// added; a member added again is not counted twice.
func testSetsLimit(t *testing.T, e cluster.Engine) {
	// Different ttls: expiry order differs from insertion order.
	addMember(t, e, "ttls", "a", 10*time.Minute, 0)
	addMember(t, e, "ttls", "b", 30*time.Minute, 0)
	addMember(t, e, "ttls", "c", 20*time.Minute, 0)
	addMember(t, e, "ttls", "d", 40*time.Minute, 2)
	wantMembers(t, e, "ttls", "b", "d")

	// A fixed ttl: the oldest go. The pauses keep expiries apart on engines that keep
	// milliseconds.
	for i := 1; i <= 5; i++ {
		addMember(t, e, "nonces", fmt.Sprintf("m%d", i), time.Minute, 3)
		wantLen := min(i, 3)
		if got := members(t, e, "nonces"); len(got) != wantLen {
			t.Fatalf("after adding m%d with limit 3: Members = %q, want %d", i, got, wantLen)
		}
		time.Sleep(5 * time.Millisecond)
	}
	wantMembers(t, e, "nonces", "m3", "m4", "m5")
	// Adding a member already there does not evict; it now expires last.
	addMember(t, e, "nonces", "m3", time.Minute, 3)
	wantMembers(t, e, "nonces", "m3", "m4", "m5")
	time.Sleep(5 * time.Millisecond)
	addMember(t, e, "nonces", "m6", time.Minute, 3)
	wantMembers(t, e, "nonces", "m3", "m5", "m6")

	// The member just added is kept even when it expires before the others.
	addMember(t, e, "kept", "x", time.Hour, 0)
	addMember(t, e, "kept", "y", 2*time.Hour, 0)
	addMember(t, e, "kept", "z", time.Minute, 2)
	wantMembers(t, e, "kept", "y", "z")
	addMember(t, e, "kept", "w", time.Minute, 1)
	wantMembers(t, e, "kept", "w")

	// A limit of 0 or below is no limit.
	for i := range 5 {
		addMember(t, e, "unlimited", fmt.Sprint(i), time.Minute, -i)
	}
	if got := members(t, e, "unlimited"); len(got) != 5 {
		t.Fatalf("Members with no limit = %q, want 5", got)
	}
}

// testSetsLimitCountsLive: expired members do not count against the limit.
func testSetsLimitCountsLive(t *testing.T, e cluster.Engine) {
	ttl := 200 * time.Millisecond
	addMember(t, e, "s", "expired", ttl, 0)
	addMember(t, e, "s", "b", time.Minute, 0)
	time.Sleep(ttl + margin)
	addMember(t, e, "s", "c", time.Minute, 2)
	wantMembers(t, e, "s", "b", "c")
}

// testSetsConcurrentTake: of concurrent takers of one member exactly one gets true.
func testSetsConcurrentTake(t *testing.T, e cluster.Engine) {
	runConcurrentTake(t, e, e)
}

// runConcurrentTake races 16 takers per member, alternating between a and b.
func runConcurrentTake(t *testing.T, a, b cluster.Engine) {
	const takers, rounds = 16, 5
	ctx := ctxT(t)
	for round := range rounds {
		member := fmt.Sprintf("nonce-%d", round)
		addMember(t, a, "open", member, time.Minute, 0)
		addMember(t, a, "open", "bystander", time.Minute, 0)
		var (
			wg    sync.WaitGroup
			mu    sync.Mutex
			wins  int
			start = make(chan struct{})
		)
		for i := range takers {
			e := a
			if i%2 == 1 {
				e = b
			}
			wg.Go(func() {
				<-start
				ok, err := e.TakeMember(ctx, "open", member)
				if err != nil {
					t.Errorf("TakeMember: %v", err)
					return
				}
				if ok {
					mu.Lock()
					wins++
					mu.Unlock()
				}
			})
		}
		close(start)
		wg.Wait()
		if wins != 1 {
			t.Fatalf("round %d: %d of %d concurrent TakeMember got true, want exactly 1", round, wins, takers)
		}
		wantMembers(t, b, "open", "bystander")
	}
}
