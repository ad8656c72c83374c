package webhooks

import (
	"math/rand/v2"
	"time"
)

// The retry schedule.
//
// A failed attempt is retried after NextDelay: 10 s, doubling up to 1 h, with equal
// jitter. Retries go on while the delivery is younger than MaxAge, so a receiver that is
// down for up to a day still gets every event (some 30 to 55 attempts in all).
//
// An integration that keeps failing is disabled: once DisableAfter consecutive deliveries
// of it have ended failed (a permanent failure, or retries exhausted), the queue sets
// enabled=false and writes a log entry saying why. Any successful delivery resets the
// count; the owner re-enables the integration from the dashboard once the receiver works.
const (
	// BaseDelay is the wait before the first retry.
	BaseDelay = 10 * time.Second
	// MaxDelay caps the wait between two attempts.
	MaxDelay = time.Hour
	// MaxAge is how long a delivery is retried: at least 24 hours.
	MaxAge = 24 * time.Hour
	// DisableAfter is the number of consecutive failed deliveries that disables an
	// integration.
	DisableAfter = 50
)

// NextDelay returns the wait before retry number attempt (1 for the first retry, after the
// first failure). The ceiling is BaseDelay·2^(attempt-1), capped at MaxDelay, and the
// delay is drawn uniformly from [ceiling/2, ceiling] ("equal jitter"): the random half
// spreads retries of many deliveries after an outage, the fixed half keeps the backoff
// growing. rnd nil uses the global source.
func NextDelay(attempt int, rnd *rand.Rand) time.Duration {
	if attempt < 1 {
		attempt = 1
	}
	ceiling := MaxDelay
	// 10 s·2^9 already exceeds the cap; stopping the shift there also avoids overflow.
	if attempt <= 9 {
		ceiling = min(BaseDelay<<(attempt-1), MaxDelay)
	}
	half := ceiling / 2
	if rnd != nil {
		return half + time.Duration(rnd.Int64N(int64(half)+1))
	}
	return half + rand.N(half+1)
}

// NextRetry decides what follows a failed attempt: the time of the next one, or false when
// the delivery is over (a permanent failure, or the delivery has been retried for MaxAge).
// attempt is the number of attempts made so far; first is when the first was made. The
// receiver's Retry-After is honoured when it asks for longer than the backoff.
func NextRetry(a Attempt, attempt int, first, now time.Time, rnd *rand.Rand) (time.Time, bool) {
	if a.OK() || !a.Retryable || now.Sub(first) >= MaxAge {
		return time.Time{}, false
	}
	return now.Add(max(NextDelay(attempt, rnd), a.RetryAfter)), true
}
