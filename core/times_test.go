package core

import (
	"math"
	"testing"
	"time"
)

func TestAddSecondsStopsAtMaxTime(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	nearEnd := time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		base time.Time
		secs int64
		want time.Time
	}{
		{"ordinary", now, 3600, now.Add(time.Hour)},
		{"past the end", nearEnd, 2 * 86400, MaxTime()},
		{"at the end", MaxTime(), 1, MaxTime()},
		{"beyond time.Duration", now, math.MaxInt64, MaxTime()},
		{"exactly to the end", nearEnd, 86399, MaxTime()},
	} {
		got := AddSeconds(c.base, c.secs)
		if !got.Equal(c.want) {
			t.Errorf("%s: AddSeconds = %v, want %v", c.name, got, c.want)
		}
		s := got.UTC().Format(time.RFC3339)
		if back, err := time.Parse(time.RFC3339, s); err != nil || !back.Equal(got) {
			t.Errorf("%s: %s does not read back: %v", c.name, s, err)
		}
	}
	legacy := time.Date(10000, 1, 2, 0, 0, 0, 0, time.UTC) // stored before expiries were bounded
	if got := Writable(legacy); !got.Equal(MaxTime()) {
		t.Errorf("Writable(%v) = %v, want MaxTime", legacy, got)
	}
	if got := Writable(now); !got.Equal(now) {
		t.Errorf("Writable(%v) = %v", now, got)
	}
	if WithinTimeRange(MaxTime().Add(time.Millisecond)) || !WithinTimeRange(MaxTime()) {
		t.Error("WithinTimeRange does not end at MaxTime")
	}
}
