package realtime

import (
	"testing"
	"time"
)

func TestWindow(t *testing.T) {
	w := Window{Limit: 3, Per: 10 * time.Second}
	at := time.Unix(1000, 0)
	for i := range 3 {
		if !w.Allow(at.Add(time.Duration(i) * time.Second)) {
			t.Fatalf("hit %d refused", i)
		}
	}
	if w.Allow(at.Add(9 * time.Second)) {
		t.Fatal("4th hit within the window allowed")
	}
	if !w.Allow(at.Add(10*time.Second + time.Millisecond)) {
		t.Fatal("a hit after the first left the window refused")
	}
	if w.Allow(at.Add(10*time.Second + 2*time.Millisecond)) {
		t.Fatal("refused hits must not count, but the window is full again")
	}
}
