package clustertest

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/cluster"
)

// Windows and ttls used by the time-dependent subtests: short so the suite stays quick,
// margin generous so that rounding (Redis keeps microseconds and milliseconds) and clock
// reading order never matter.
const (
	shortWindow = 500 * time.Millisecond
	margin      = 100 * time.Millisecond
	longWindow  = time.Hour
)

// Run runs the conformance suite. newEngine must return a fresh engine (or one with a fresh
// key prefix) each time it is called; Run closes each engine when its subtest ends, and also
// calls Close itself in some subtests, so Close must be idempotent. The subtests that need
// two nodes sharing one backend are in RunShared.
func Run(t *testing.T, newEngine func(t *testing.T) cluster.Engine) {
	subtests := []struct {
		name string
		fn   func(t *testing.T, e cluster.Engine)
	}{
		{"Engine/NameAndPing", testNameAndPing},
		{"Engine/CloseIsIdempotentAndFinal", testClose},
		{"Limiter/Exact", testLimiterExact},
		{"Limiter/RetryAfterIsHonest", testLimiterRetryAfter},
		{"Limiter/AllowedAgainAfterWindow", testLimiterAllowedAgain},
		{"Limiter/SlidingNotFixed", testLimiterSliding},
		{"Limiter/RefusedHitsNotCounted", testLimiterRefusedNotCounted},
		{"Limiter/KeysIndependent", testLimiterKeysIndependent},
		{"Limiter/Concurrent", testLimiterConcurrent},
		{"Limiter/InvalidArguments", testLimiterInvalid},
		{"Tokens/PutTakeTakeAgain", testTokenPutTake},
		{"Tokens/Values", testTokenValues},
		{"Tokens/Expiry", testTokenExpiry},
		{"Tokens/Replace", testTokenReplace},
		{"Tokens/ConcurrentTake", testTokenConcurrentTake},
		{"Namespaces/Separate", testNamespaces},
		{"Counters/AddAndTake", testCountersAddTake},
		{"Counters/ConcurrentAddsDuringTakes", testCountersConcurrent},
		{"Values/SetGetDelete", testValuesSetGetDelete},
		{"Values/Expiry", testValuesExpiry},
		{"Values/Touch", testValuesTouch},
		{"Values/TouchDoesNotRevive", testValuesTouchDoesNotRevive},
		{"Values/Replace", testValuesReplace},
		{"Sets/AddTake", testSetsAddTake},
		{"Sets/Expiry", testSetsExpiry},
		{"Sets/ReAddSetsTTL", testSetsReAddSetsTTL},
		{"Sets/Limit", testSetsLimit},
		{"Sets/LimitCountsLiveMembers", testSetsLimitCountsLive},
		{"Sets/ConcurrentTake", testSetsConcurrentTake},
		{"Batches/GetValues", testBatchesGetValues},
		{"Batches/PutLeases", testBatchesPutLeases},
		{"Leases/Bounded", testLeasesBounded},
		{"Leases/ExpiryFrees", testLeasesExpiryFrees},
		{"Leases/ConcurrentAcquire", testLeasesConcurrent},
		{"Presence/AdmitListRelease", testPresenceAdmitListRelease},
		{"Presence/OneSocketPerUser", testPresenceOneSocketPerUser},
		{"Presence/Limit", testPresenceLimit},
		{"Presence/Expiry", testPresenceExpiry},
		{"Presence/RenewShortens", testPresenceRenewShortens},
		{"Presence/RenewRestores", testPresenceRenewRestores},
		{"Presence/RenewMany", testPresenceRenewMany},
		{"Presence/ConcurrentAdmit", testPresenceConcurrentAdmit},
		{"Presence/InvalidArguments", testPresenceInvalid},
		{"Bus/Deliver", testBusDeliver},
		{"Bus/SeveralSubscribers", testBusSeveralSubscribers},
		{"Bus/OrderPerPublisher", testBusOrder},
		{"Bus/Unsubscribe", testBusUnsubscribe},
		{"Bus/PublishDoesNotWait", testBusPublishDoesNotWait},
		{"Bus/Close", testBusClose},
		{"InvalidArguments", testInvalidArguments},
	}
	for _, st := range subtests {
		t.Run(st.name, func(t *testing.T) {
			// Parallel: most subtests sleep through short windows, and each has its own
			// engine, so running them together only shortens the suite.
			t.Parallel()
			e := newEngine(t)
			t.Cleanup(func() {
				if err := e.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			st.fn(t, e)
		})
	}
}

// BenchmarkAllow measures one Allow call: b.N hits spread over 64 keys with a limit that
// refuses some of them, so both the allowed and the refused path are exercised.
func BenchmarkAllow(b *testing.B, e cluster.Engine) {
	ctx := context.Background()
	keys := make([]string, 64)
	for i := range keys {
		keys[i] = fmt.Sprintf("bench:%d", i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.Allow(ctx, keys[i%len(keys)], 100, time.Minute); err != nil {
			b.Fatalf("Allow: %v", err)
		}
	}
}

func ctxT(t *testing.T) context.Context {
	// Bounds every call so a hanging engine fails the test instead of the whole run.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func allow(t *testing.T, e cluster.Engine, key string, limit int, window time.Duration) cluster.Decision {
	t.Helper()
	d, err := e.Allow(ctxT(t), key, limit, window)
	if err != nil {
		t.Fatalf("Allow(%q, %d, %v): %v", key, limit, window, err)
	}
	return d
}

// sleepUntil sleeps until the local clock passes at.
func sleepUntil(at time.Time) {
	if d := time.Until(at); d > 0 {
		time.Sleep(d)
	}
}

func testNameAndPing(t *testing.T, e cluster.Engine) {
	if e.Name() == "" {
		t.Error("Name() is empty")
	}
	if err := e.Ping(ctxT(t)); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

func testClose(t *testing.T, e cluster.Engine) {
	ctx := ctxT(t)
	if err := e.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}
	if err := e.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	// After Close nothing answers: every method reports ErrUnavailable, never success.
	if err := e.Ping(ctx); !errors.Is(err, cluster.ErrUnavailable) {
		t.Errorf("Ping after Close = %v, want ErrUnavailable", err)
	}
	if _, err := e.Allow(ctx, "k", 5, time.Minute); !errors.Is(err, cluster.ErrUnavailable) {
		t.Errorf("Allow after Close = %v, want ErrUnavailable", err)
	}
	if err := e.PutToken(ctx, "k", "v", time.Minute); !errors.Is(err, cluster.ErrUnavailable) {
		t.Errorf("PutToken after Close = %v, want ErrUnavailable", err)
	}
	if _, ok, err := e.TakeToken(ctx, "k"); ok || !errors.Is(err, cluster.ErrUnavailable) {
		t.Errorf("TakeToken after Close = ok %v, err %v; want ErrUnavailable", ok, err)
	}
	if err := e.SetValue(ctx, "k", []byte("v"), time.Minute); !errors.Is(err, cluster.ErrUnavailable) {
		t.Errorf("SetValue after Close = %v, want ErrUnavailable", err)
	}
	if _, _, ok, err := e.GetValue(ctx, "k"); ok || !errors.Is(err, cluster.ErrUnavailable) {
		t.Errorf("GetValue after Close = ok %v, err %v; want ErrUnavailable", ok, err)
	}
	if ok, err := e.TouchValue(ctx, "k", time.Minute); ok || !errors.Is(err, cluster.ErrUnavailable) {
		t.Errorf("TouchValue after Close = ok %v, err %v; want ErrUnavailable", ok, err)
	}
	if ok, err := e.DeleteValue(ctx, "k"); ok || !errors.Is(err, cluster.ErrUnavailable) {
		t.Errorf("DeleteValue after Close = ok %v, err %v; want ErrUnavailable", ok, err)
	}
	if err := e.AddMember(ctx, "s", "m", time.Minute, 0); !errors.Is(err, cluster.ErrUnavailable) {
		t.Errorf("AddMember after Close = %v, want ErrUnavailable", err)
	}
	if ok, err := e.TakeMember(ctx, "s", "m"); ok || !errors.Is(err, cluster.ErrUnavailable) {
		t.Errorf("TakeMember after Close = ok %v, err %v; want ErrUnavailable", ok, err)
	}
	if _, err := e.Members(ctx, "s"); !errors.Is(err, cluster.ErrUnavailable) {
		t.Errorf("Members after Close = %v, want ErrUnavailable", err)
	}
	if _, err := e.CountMembers(ctx, "s"); !errors.Is(err, cluster.ErrUnavailable) {
		t.Errorf("CountMembers after Close = %v, want ErrUnavailable", err)
	}
	if err := e.Publish(ctx, "t", []byte("p")); !errors.Is(err, cluster.ErrUnavailable) {
		t.Errorf("Publish after Close = %v, want ErrUnavailable", err)
	}
	if _, err := e.Subscribe(ctx, "t", func([]byte) {}); !errors.Is(err, cluster.ErrUnavailable) {
		t.Errorf("Subscribe after Close = %v, want ErrUnavailable", err)
	}
}

// testLimiterExact is the SPEC example: 5 logins per window, the 6th is refused.
func testLimiterExact(t *testing.T, e cluster.Engine) {
	const limit = 5
	for i := range limit {
		d := allow(t, e, "login:203.0.113.7:alice", limit, longWindow)
		if !d.Allowed {
			t.Fatalf("hit %d refused, want allowed", i+1)
		}
		if want := limit - i - 1; d.Remaining != want {
			t.Errorf("hit %d: Remaining = %d, want %d", i+1, d.Remaining, want)
		}
		if d.RetryAfter != 0 {
			t.Errorf("hit %d: allowed with RetryAfter %v, want 0", i+1, d.RetryAfter)
		}
	}
	for i := range 3 {
		d := allow(t, e, "login:203.0.113.7:alice", limit, longWindow)
		if d.Allowed {
			t.Fatalf("hit %d allowed, want refused", limit+i+1)
		}
		if d.Remaining != 0 {
			t.Errorf("refused hit: Remaining = %d, want 0", d.Remaining)
		}
		if d.RetryAfter <= 0 || d.RetryAfter > longWindow {
			t.Errorf("refused hit: RetryAfter = %v, want in (0, %v]", d.RetryAfter, longWindow)
		}
	}
}

// testLimiterRetryAfter checks that RetryAfter is in (0, window] and that waiting it out is
// enough: the oldest counted hit has then left the window.
func testLimiterRetryAfter(t *testing.T, e cluster.Engine) {
	const limit = 2
	for range limit {
		if !allow(t, e, "k", limit, shortWindow).Allowed {
			t.Fatal("first hits refused")
		}
	}
	d := allow(t, e, "k", limit, shortWindow)
	refusedAt := time.Now() // after the call returned: the engine decided no later than this
	if d.Allowed {
		t.Fatal("hit over the limit allowed")
	}
	if d.RetryAfter <= 0 || d.RetryAfter > shortWindow {
		t.Fatalf("RetryAfter = %v, want in (0, %v]", d.RetryAfter, shortWindow)
	}
	sleepUntil(refusedAt.Add(d.RetryAfter + margin))
	if d := allow(t, e, "k", limit, shortWindow); !d.Allowed {
		t.Fatalf("refused after waiting RetryAfter (%v): %+v", d.RetryAfter, d)
	}
}

func testLimiterAllowedAgain(t *testing.T, e cluster.Engine) {
	const limit = 3
	start := time.Now() // before the first counted hit
	for range limit {
		if !allow(t, e, "k", limit, shortWindow).Allowed {
			t.Fatal("first hits refused")
		}
	}
	lastAllowed := time.Now() // after the last counted hit
	d := allow(t, e, "k", limit, shortWindow)
	if time.Since(start) < shortWindow {
		// All counted hits are certainly still inside the window.
		if d.Allowed {
			t.Fatal("hit over the limit allowed inside the window")
		}
	} else {
		t.Logf("machine too slow to check refusal inside a %v window; skipped", shortWindow)
	}
	sleepUntil(lastAllowed.Add(shortWindow + margin))
	for i := range limit {
		d := allow(t, e, "k", limit, shortWindow)
		if !d.Allowed {
			t.Fatalf("hit %d after the window refused", i+1)
		}
		if want := limit - i - 1; d.Remaining != want {
			t.Errorf("hit %d after the window: Remaining = %d, want %d", i+1, d.Remaining, want)
		}
	}
}

// testLimiterSliding tells a sliding window from a fixed one: after the first hit leaves the
// window exactly one more hit is allowed, because the second is still inside it.
func testLimiterSliding(t *testing.T, e cluster.Engine) {
	const limit = 2
	window := 1200 * time.Millisecond
	if !allow(t, e, "k", limit, window).Allowed {
		t.Fatal("hit A refused")
	}
	aDone := time.Now()
	time.Sleep(window / 2)
	bStart := time.Now() // before hit B: B leaves the window no earlier than bStart+window
	if !allow(t, e, "k", limit, window).Allowed {
		t.Fatal("hit B refused")
	}
	bDone := time.Now()
	if d := allow(t, e, "k", limit, window); d.Allowed {
		t.Fatal("hit C allowed: A and B are both inside the window")
	}
	// A leaves the window; B stays in it until bStart+window at the earliest.
	sleepUntil(aDone.Add(window + margin))
	d := allow(t, e, "k", limit, window)
	if !d.Allowed {
		t.Fatal("hit D refused after A left the window")
	}
	eStart := time.Now()
	dE := allow(t, e, "k", limit, window)
	if time.Since(bStart) >= window {
		t.Logf("machine too slow to check that B still counts; skipped")
		return
	}
	// B was inside the window for both D and E.
	if d.Remaining != 0 {
		t.Errorf("hit D: Remaining = %d, want 0 (B and D in the window)", d.Remaining)
	}
	if dE.Allowed {
		t.Fatal("hit E allowed: B and D are both inside the window (a fixed window?)")
	}
	// E may retry when B leaves, which is no later than bDone+window: RetryAfter is not
	// just "a window" (a millisecond allows for engines that round).
	if most := window - eStart.Sub(bDone) + time.Millisecond; dE.RetryAfter <= 0 || dE.RetryAfter > most {
		t.Errorf("hit E: RetryAfter = %v, want in (0, %v]", dE.RetryAfter, most)
	}
}

// testLimiterRefusedNotCounted: refused hits made late in the window must not keep the key
// blocked once the allowed hits leave it.
func testLimiterRefusedNotCounted(t *testing.T, e cluster.Engine) {
	const limit = 2
	for range limit {
		if !allow(t, e, "k", limit, shortWindow).Allowed {
			t.Fatal("first hits refused")
		}
	}
	lastAllowed := time.Now()
	time.Sleep(shortWindow / 2)
	for range 5 {
		if allow(t, e, "k", limit, shortWindow).Allowed {
			t.Fatal("hit over the limit allowed")
		}
	}
	// The refused hits happened after the allowed ones; if they counted, they would still be
	// inside the window now.
	sleepUntil(lastAllowed.Add(shortWindow + margin))
	d := allow(t, e, "k", limit, shortWindow)
	if !d.Allowed {
		t.Fatal("refused after the allowed hits left the window: refused hits were counted")
	}
	if d.Remaining != limit-1 {
		t.Errorf("Remaining = %d, want %d: refused hits were counted", d.Remaining, limit-1)
	}
}

func testLimiterKeysIndependent(t *testing.T, e cluster.Engine) {
	if !allow(t, e, "ip:203.0.113.7", 1, longWindow).Allowed {
		t.Fatal("first hit refused")
	}
	if allow(t, e, "ip:203.0.113.7", 1, longWindow).Allowed {
		t.Fatal("second hit of a limit-1 key allowed")
	}
	for _, key := range []string{"ip:203.0.113.8", "ip:203.0.113.7:", "ip:203.0.113", "", "ключ {x} *"} {
		if d := allow(t, e, key, 1, longWindow); !d.Allowed {
			t.Errorf("key %q refused: it shares no hits with ip:203.0.113.7", key)
		}
	}
}

func testLimiterConcurrent(t *testing.T, e cluster.Engine) {
	const limit, hitters = 10, 50
	ctx := ctxT(t)
	var (
		wg            sync.WaitGroup
		mu            sync.Mutex
		allowed, errs int
		remainingSeen = map[int]int{}
		start         = make(chan struct{})
	)
	for range hitters {
		wg.Go(func() {
			<-start
			d, err := e.Allow(ctx, "hot", limit, longWindow)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs++
				t.Errorf("Allow: %v", err)
				return
			}
			if d.Allowed {
				allowed++
				remainingSeen[d.Remaining]++
			}
		})
	}
	close(start)
	wg.Wait()
	if errs > 0 {
		t.FailNow()
	}
	if allowed != limit {
		t.Fatalf("%d of %d concurrent hits allowed, want exactly %d", allowed, hitters, limit)
	}
	// Each allowed hit saw a distinct count: Remaining 9, 8, ..., 0 once each.
	for r := range limit {
		if remainingSeen[r] != 1 {
			t.Errorf("Remaining %d seen %d times, want once: %v", r, remainingSeen[r], remainingSeen)
		}
	}
}

func testLimiterInvalid(t *testing.T, e cluster.Engine) {
	ctx := ctxT(t)
	for _, c := range []struct {
		limit  int
		window time.Duration
	}{{0, time.Minute}, {-1, time.Minute}, {5, 0}, {5, -time.Second}} {
		_, err := e.Allow(ctx, "k", c.limit, c.window)
		if err == nil {
			t.Errorf("Allow(limit %d, window %v) succeeded, want an error", c.limit, c.window)
		} else if errors.Is(err, cluster.ErrUnavailable) {
			t.Errorf("Allow(limit %d, window %v) = %v: a caller bug is not unavailability", c.limit, c.window, err)
		}
	}
	if err := e.PutToken(ctx, "k", "v", 0); err == nil || errors.Is(err, cluster.ErrUnavailable) {
		t.Errorf("PutToken(ttl 0) = %v, want a non-unavailability error", err)
	}
}

// testInvalidArguments: a ttl that is not positive, or an empty key, set or topic, is a
// caller's bug: an error that is not unavailability, and nothing stored.
func testInvalidArguments(t *testing.T, e cluster.Engine) {
	ctx := ctxT(t)
	check := func(call string, err error) {
		t.Helper()
		if err == nil {
			t.Errorf("%s succeeded, want an error", call)
		} else if errors.Is(err, cluster.ErrUnavailable) {
			t.Errorf("%s = %v: a caller bug is not unavailability", call, err)
		}
	}
	for _, ttl := range []time.Duration{0, -time.Second} {
		check(fmt.Sprintf("SetValue(ttl %v)", ttl), e.SetValue(ctx, "k", []byte("v"), ttl))
		_, err := e.TouchValue(ctx, "k", ttl)
		check(fmt.Sprintf("TouchValue(ttl %v)", ttl), err)
		check(fmt.Sprintf("AddMember(ttl %v)", ttl), e.AddMember(ctx, "s", "m", ttl, 0))
	}
	check("SetValue(empty key)", e.SetValue(ctx, "", []byte("v"), time.Minute))
	_, _, _, err := e.GetValue(ctx, "")
	check("GetValue(empty key)", err)
	_, err = e.TouchValue(ctx, "", time.Minute)
	check("TouchValue(empty key)", err)
	_, err = e.DeleteValue(ctx, "")
	check("DeleteValue(empty key)", err)
	check("AddMember(empty set)", e.AddMember(ctx, "", "m", time.Minute, 0))
	_, err = e.TakeMember(ctx, "", "m")
	check("TakeMember(empty set)", err)
	_, err = e.Members(ctx, "")
	check("Members(empty set)", err)
	_, err = e.CountMembers(ctx, "")
	check("CountMembers(empty set)", err)
	check("Publish(empty topic)", e.Publish(ctx, "", []byte("p")))
	unsub, err := e.Subscribe(ctx, "", func([]byte) {})
	check("Subscribe(empty topic)", err)
	if unsub != nil {
		unsub()
	}
	unsub, err = e.Subscribe(ctx, "t", nil)
	check("Subscribe(nil callback)", err)
	if unsub != nil {
		unsub()
	}

	// Nothing was stored by the refused calls.
	if _, _, ok, err := e.GetValue(ctx, "k"); err != nil || ok {
		t.Errorf("GetValue after refused SetValue calls = %v, %v; want absent", ok, err)
	}
	wantMembers(t, e, "s")
}

func testTokenPutTake(t *testing.T, e cluster.Engine) {
	ctx := ctxT(t)
	if v, ok, err := e.TakeToken(ctx, "nonce:missing"); err != nil || ok || v != "" {
		t.Fatalf("TakeToken(missing) = %q, %v, %v; want \"\", false, nil", v, ok, err)
	}
	if err := e.PutToken(ctx, "nonce:1", "client-a", time.Minute); err != nil {
		t.Fatalf("PutToken: %v", err)
	}
	if err := e.PutToken(ctx, "nonce:2", "client-b", time.Minute); err != nil {
		t.Fatalf("PutToken: %v", err)
	}
	if v, ok, err := e.TakeToken(ctx, "nonce:1"); err != nil || !ok || v != "client-a" {
		t.Fatalf("TakeToken = %q, %v, %v; want client-a, true, nil", v, ok, err)
	}
	if v, ok, err := e.TakeToken(ctx, "nonce:1"); err != nil || ok || v != "" {
		t.Fatalf("second TakeToken = %q, %v, %v; want \"\", false, nil", v, ok, err)
	}
	if v, ok, err := e.TakeToken(ctx, "nonce:2"); err != nil || !ok || v != "client-b" {
		t.Fatalf("TakeToken(other key) = %q, %v, %v; want client-b, true, nil", v, ok, err)
	}
}

func testTokenValues(t *testing.T, e cluster.Engine) {
	ctx := ctxT(t)
	for i, v := range []string{"", " ", "1", "ключ\x00\xff{}*\n", string(make([]byte, 4096))} {
		key := fmt.Sprintf("v%d", i)
		if err := e.PutToken(ctx, key, v, time.Minute); err != nil {
			t.Fatalf("PutToken(%q): %v", v, err)
		}
		got, ok, err := e.TakeToken(ctx, key)
		if err != nil || !ok || got != v {
			t.Errorf("TakeToken = %q (len %d), %v, %v; want %q (len %d), true, nil", got, len(got), ok, err, v, len(v))
		}
	}
}

func testTokenExpiry(t *testing.T, e cluster.Engine) {
	ctx := ctxT(t)
	ttl := 300 * time.Millisecond
	if err := e.PutToken(ctx, "short", "v", ttl); err != nil {
		t.Fatalf("PutToken: %v", err)
	}
	if err := e.PutToken(ctx, "long", "v", time.Minute); err != nil {
		t.Fatalf("PutToken: %v", err)
	}
	sleepUntil(time.Now().Add(ttl + margin))
	if v, ok, err := e.TakeToken(ctx, "short"); err != nil || ok {
		t.Fatalf("TakeToken after ttl = %q, %v, %v; want not ok", v, ok, err)
	}
	if v, ok, err := e.TakeToken(ctx, "long"); err != nil || !ok || v != "v" {
		t.Fatalf("TakeToken before ttl = %q, %v, %v; want v, true, nil", v, ok, err)
	}
}

// testTokenReplace: a second put replaces both the value and the ttl.
func testTokenReplace(t *testing.T, e cluster.Engine) {
	ctx := ctxT(t)
	if err := e.PutToken(ctx, "k", "old", 200*time.Millisecond); err != nil {
		t.Fatalf("PutToken: %v", err)
	}
	if err := e.PutToken(ctx, "k", "new", time.Minute); err != nil {
		t.Fatalf("PutToken: %v", err)
	}
	time.Sleep(200*time.Millisecond + margin)
	if v, ok, err := e.TakeToken(ctx, "k"); err != nil || !ok || v != "new" {
		t.Fatalf("TakeToken = %q, %v, %v; want new, true, nil (value and ttl replaced)", v, ok, err)
	}
	if _, ok, err := e.TakeToken(ctx, "k"); err != nil || ok {
		t.Fatalf("second TakeToken = %v, %v; want not ok", ok, err)
	}
}

func testTokenConcurrentTake(t *testing.T, e cluster.Engine) {
	const takers, rounds = 20, 5
	ctx := ctxT(t)
	for round := range rounds {
		key := fmt.Sprintf("nonce:%d", round)
		want := fmt.Sprintf("value-%d", round)
		if err := e.PutToken(ctx, key, want, time.Minute); err != nil {
			t.Fatalf("PutToken: %v", err)
		}
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			winners []string
			start   = make(chan struct{})
		)
		for range takers {
			wg.Go(func() {
				<-start
				v, ok, err := e.TakeToken(ctx, key)
				if err != nil {
					t.Errorf("TakeToken: %v", err)
					return
				}
				if ok {
					mu.Lock()
					winners = append(winners, v)
					mu.Unlock()
				}
			})
		}
		close(start)
		wg.Wait()
		if len(winners) != 1 || winners[0] != want {
			t.Fatalf("round %d: winners %q, want exactly one taking %q", round, winners, want)
		}
	}
}

// testNamespaces: the same string used as a limiter key, a token key, a counter group, a
// value key, a set and a topic names six unrelated things.
func testNamespaces(t *testing.T, e cluster.Engine) {
	ctx := ctxT(t)
	const name = "same"
	if err := e.PutToken(ctx, name, "v", time.Minute); err != nil {
		t.Fatalf("PutToken: %v", err)
	}
	if _, err := e.AddCount(ctx, name, "f", 1); err != nil {
		t.Fatalf("AddCount: %v", err)
	}
	if _, _, ok, err := e.GetValue(ctx, name); err != nil || ok {
		t.Fatalf("GetValue = %v, %v; want absent: values share state with another kind", ok, err)
	}
	if err := e.SetValue(ctx, name, []byte("val"), time.Minute); err != nil {
		t.Fatalf("SetValue: %v", err)
	}
	if n, err := e.CountMembers(ctx, name); err != nil || n != 0 {
		t.Fatalf("CountMembers = %d, %v; want 0: sets share state with another kind", n, err)
	}
	if err := e.AddMember(ctx, name, "m", time.Minute, 1); err != nil {
		t.Fatalf("AddMember: %v", err)
	}
	if err := e.Publish(ctx, name, []byte("p")); err != nil {
		t.Fatalf("Publish: %v", err)
	}
	if v, _, ok, err := e.GetValue(ctx, name); err != nil || !ok || string(v) != "val" {
		t.Fatalf("GetValue = %q, %v, %v; want val", v, ok, err)
	}
	wantMembers(t, e, name, "m")
	if got, err := e.TakeCounts(ctx, name); err != nil || len(got) != 1 || got["f"] != 1 {
		t.Fatalf("TakeCounts = %v, %v; want f:1", got, err)
	}
	if d := allow(t, e, name, 1, longWindow); !d.Allowed {
		t.Fatal("limiter key refused: it shares state with a token")
	}
	if v, ok, err := e.TakeToken(ctx, name); err != nil || !ok || v != "v" {
		t.Fatalf("TakeToken = %q, %v, %v; want v, true, nil", v, ok, err)
	}
}

func testCountersAddTake(t *testing.T, e cluster.Engine) {
	ctx := context.Background()
	if got, err := e.TakeCounts(ctx, "calls"); err != nil || len(got) != 0 {
		t.Fatalf("take of an empty group: %v %v", got, err)
	}
	for i, want := range []int64{1, 2, 7} {
		delta := int64(1)
		if i == 2 {
			delta = 5
		}
		n, err := e.AddCount(ctx, "calls", "acct-a", delta)
		if err != nil || n != want {
			t.Fatalf("add %d: %d %v, want %d", i, n, err, want)
		}
	}
	if _, err := e.AddCount(ctx, "calls", "acct-b", 3); err != nil {
		t.Fatal(err)
	}
	if _, err := e.AddCount(ctx, "other", "acct-a", 100); err != nil {
		t.Fatal(err)
	}
	got, err := e.TakeCounts(ctx, "calls")
	if err != nil || len(got) != 2 || got["acct-a"] != 7 || got["acct-b"] != 3 {
		t.Fatalf("take: %v %v", got, err)
	}
	if got, _ := e.TakeCounts(ctx, "calls"); len(got) != 0 {
		t.Fatalf("second take: %v", got)
	}
	if n, _ := e.AddCount(ctx, "calls", "acct-a", 1); n != 1 {
		t.Fatalf("counter did not restart after a take: %d", n)
	}
	if got, _ := e.TakeCounts(ctx, "other"); got["acct-a"] != 100 {
		t.Fatalf("other group: %v", got)
	}
}

// testCountersConcurrent adds from many goroutines while another keeps taking: the sum of
// everything taken equals everything added.
func testCountersConcurrent(t *testing.T, e cluster.Engine) {
	ctx := context.Background()
	const workers, adds = 10, 50
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < adds; i++ {
				if _, err := e.AddCount(ctx, "busy", "acct", 1); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	stop, done := make(chan struct{}), make(chan struct{})
	var taken int64
	go func() {
		defer close(done)
		for {
			select {
			case <-stop:
				return
			default:
			}
			got, err := e.TakeCounts(ctx, "busy")
			if err != nil {
				t.Error(err)
				return
			}
			taken += got["acct"]
		}
	}()
	wg.Wait()
	close(stop)
	<-done
	rest, _ := e.TakeCounts(ctx, "busy")
	if total := taken + rest["acct"]; total != workers*adds {
		t.Fatalf("taken %d + left %d != added %d", taken, rest["acct"], workers*adds)
	}
}
