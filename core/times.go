package core

import "time"

// MaxTime is the latest instant the server stores or writes: the last whole second of year
// 9999. RFC 3339 has four-digit years, so a later time could be written (Go writes
// 10000-01-01T…) but never read back; every expiry the server computes by adding a
// duration stops here, and input past it is refused.
func MaxTime() time.Time { return time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC) }

// AddSeconds answers base plus secs seconds, bounded by MaxTime (and computed in seconds,
// so no time.Duration overflows on the way).
func AddSeconds(base time.Time, secs int64) time.Time {
	limit := MaxTime()
	if !base.Before(limit) || secs >= limit.Unix()-base.Unix() {
		return limit
	}
	return base.Add(time.Duration(secs) * time.Second)
}

// WithinTimeRange reports whether t is an instant the server can write and read back.
func WithinTimeRange(t time.Time) bool {
	return !t.After(MaxTime()) && t.Year() >= 0
}

// Writable answers t, or MaxTime when t is later: a time stored before expiries were bounded
// is still written as one the server reads back.
func Writable(t time.Time) time.Time {
	if limit := MaxTime(); t.After(limit) {
		return limit
	}
	return t
}
