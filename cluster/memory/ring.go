package memory

import (
	"time"

	"github.com/keyward/keyward/cluster"
)

// ring holds the times of the allowed hits of one limiter key, oldest first, in a circular
// buffer of at most `limit` slots: once `limit` hits are stored the next one is refused,
// so more are never needed and a key's memory is bounded. The buffer starts at one slot
// (most keys, one per caller's address, are hit once in their window) and doubles on
// demand, so a generous limit costs nothing for keys that are rarely hit.
type ring struct {
	times  []time.Duration // stamps (Engine.stamp), circular; len(times) <= limit
	head   int             // index of the oldest stored hit
	n      int             // number of stored hits
	limit  int             // the limit last used with this key
	window time.Duration
}

// hit records one hit at now if fewer than limit stored hits are younger than window.
func (r *ring) hit(now time.Duration, limit int, window time.Duration) cluster.Decision {
	if limit != r.limit {
		// Callers use one limit per key, so this runs once per key in practice.
		r.limit = limit
		if len(r.times) > limit {
			r.relayout(limit)
		}
	}
	r.window = window
	// Forget hits that left the window: a hit at h counts while now-h < window.
	for r.n > 0 && now-r.times[r.head] >= window {
		r.times[r.head] = 0
		r.head = (r.head + 1) % len(r.times)
		r.n--
	}
	if r.n < limit {
		if r.n == len(r.times) {
			r.relayout(min(max(2*len(r.times), 1), limit))
		}
		r.times[(r.head+r.n)%len(r.times)] = now
		r.n++
		return cluster.Decision{Allowed: true, Remaining: limit - r.n}
	}
	// Refused, and not stored: refused hits do not count. One more hit is allowed once the
	// oldest stored hit leaves the window.
	retry := r.times[r.head] + window - now
	// A clock that stepped back (only an injected one can) must not yield a RetryAfter
	// outside (0, window].
	retry = min(max(retry, time.Nanosecond), window)
	return cluster.Decision{Allowed: false, Remaining: 0, RetryAfter: retry}
}

// relayout copies the stored hits, oldest first, into a new buffer of size slots, keeping
// the newest ones if they do not all fit.
func (r *ring) relayout(size int) {
	times := make([]time.Duration, size)
	keep := min(r.n, size)
	for i := range keep {
		times[i] = r.times[(r.head+r.n-keep+i)%len(r.times)]
	}
	r.times, r.head, r.n = times, 0, keep
}

// expired reports whether every stored hit has left the window, so the key can be dropped
// without changing any future decision.
func (r *ring) expired(now time.Duration) bool {
	if r.n == 0 {
		return true
	}
	newest := r.times[(r.head+r.n-1)%len(r.times)]
	return now-newest >= r.window
}
