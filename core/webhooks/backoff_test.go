package webhooks

import (
	"math/rand/v2"
	"testing"
	"time"
)

func ceilingFor(attempt int) time.Duration {
	c := BaseDelay
	for i := 1; i < attempt && c < MaxDelay; i++ {
		c *= 2
	}
	return min(c, MaxDelay)
}

func TestNextDelayBoundsAndGrowth(t *testing.T) {
	rnd := rand.New(rand.NewPCG(1, 2))
	prevLow := time.Duration(0)
	for attempt := 1; attempt <= 20; attempt++ {
		c := ceilingFor(attempt)
		lo, hi := c, time.Duration(0)
		for range 2000 {
			d := NextDelay(attempt, rnd)
			if d < c/2 || d > c {
				t.Fatalf("NextDelay(%d) = %v, outside [%v, %v]", attempt, d, c/2, c)
			}
			lo, hi = min(lo, d), max(hi, d)
		}
		// Equal jitter: the samples spread over the upper half of the ceiling.
		if hi-lo < c/4 {
			t.Errorf("attempt %d: samples in [%v, %v], too little jitter for ceiling %v", attempt, lo, hi, c)
		}
		if c/2 < prevLow {
			t.Errorf("attempt %d: lower bound %v below the previous attempt's %v", attempt, c/2, prevLow)
		}
		prevLow = c / 2
	}
	if got := ceilingFor(1); got != 10*time.Second {
		t.Errorf("first ceiling %v, want 10s", got)
	}
	if got := ceilingFor(2); got != 20*time.Second {
		t.Errorf("second ceiling %v, want 20s", got)
	}
	if got := ceilingFor(9); got != 2560*time.Second {
		t.Errorf("ninth ceiling %v, want 2560s", got)
	}
	if got := ceilingFor(10); got != time.Hour {
		t.Errorf("tenth ceiling %v, want the 1h cap", got)
	}
}

func TestNextDelayEdgeAttempts(t *testing.T) {
	for _, attempt := range []int{-5, 0} {
		if d := NextDelay(attempt, nil); d < 5*time.Second || d > 10*time.Second {
			t.Errorf("NextDelay(%d) = %v, want the first retry's [5s, 10s]", attempt, d)
		}
	}
	for _, attempt := range []int{64, 1000, int(^uint(0) >> 1)} {
		if d := NextDelay(attempt, nil); d < MaxDelay/2 || d > MaxDelay {
			t.Errorf("NextDelay(%d) = %v, want within [30m, 1h]", attempt, d)
		}
	}
}

func TestScheduleRetriesForAtLeastMaxAge(t *testing.T) {
	fail := Attempt{StatusCode: 503, Err: "HTTP 503", Retryable: true}
	for seed := range uint64(50) {
		rnd := rand.New(rand.NewPCG(seed, 99))
		first := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		now, attempts := first, 1
		for {
			next, ok := NextRetry(fail, attempts, first, now, rnd)
			if !ok {
				break
			}
			if d := next.Sub(now); d > MaxDelay {
				t.Fatalf("seed %d: gap %v above MaxDelay", seed, d)
			}
			now = next
			attempts++
		}
		if age := now.Sub(first); age < MaxAge || age >= MaxAge+MaxDelay {
			t.Errorf("seed %d: last attempt at %v, want within [24h, 25h)", seed, age)
		}
		if attempts < 30 || attempts > 55 {
			t.Errorf("seed %d: %d attempts over the schedule", seed, attempts)
		}
	}
}

func TestNextRetry(t *testing.T) {
	first := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := first.Add(time.Minute)
	rnd := rand.New(rand.NewPCG(3, 4))

	if _, ok := NextRetry(Attempt{StatusCode: 200}, 1, first, now, rnd); ok {
		t.Error("a success is retried")
	}
	if _, ok := NextRetry(Attempt{StatusCode: 404, Err: "HTTP 404"}, 1, first, now, rnd); ok {
		t.Error("a permanent failure is retried")
	}
	if _, ok := NextRetry(Attempt{Err: "timeout", Retryable: true}, 30, first, first.Add(MaxAge), rnd); ok {
		t.Error("a delivery older than MaxAge is retried")
	}
	next, ok := NextRetry(Attempt{Err: "timeout", Retryable: true}, 1, first, now, rnd)
	if d := next.Sub(now); !ok || d < 5*time.Second || d > 10*time.Second {
		t.Errorf("first retry in %v (%v), want [5s, 10s]", d, ok)
	}
	// Retry-After beyond the backoff wins; below it, the backoff does.
	next, ok = NextRetry(Attempt{StatusCode: 429, Err: "HTTP 429", Retryable: true, RetryAfter: 10 * time.Minute}, 1, first, now, rnd)
	if d := next.Sub(now); !ok || d != 10*time.Minute {
		t.Errorf("retry with Retry-After 10m in %v (%v)", d, ok)
	}
	next, ok = NextRetry(Attempt{StatusCode: 429, Err: "HTTP 429", Retryable: true, RetryAfter: time.Second}, 5, first, now, rnd)
	if d := next.Sub(now); !ok || d < 80*time.Second {
		t.Errorf("retry with Retry-After 1s at attempt 5 in %v (%v), want the backoff", d, ok)
	}
}

func TestSchedulePolicyConstants(t *testing.T) {
	if MaxAge < 24*time.Hour {
		t.Errorf("MaxAge %v: deliveries must be retried for at least 24h", MaxAge)
	}
	if DisableAfter < 1 {
		t.Errorf("DisableAfter %d", DisableAfter)
	}
	if MaxRetryAfter > MaxDelay {
		t.Errorf("MaxRetryAfter %v above MaxDelay %v", MaxRetryAfter, MaxDelay)
	}
}
