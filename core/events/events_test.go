package events

import (
	"sync"
	"testing"
	"time"
)

func TestFanOutInOrderAndClose(t *testing.T) {
	b := NewBus(nil)
	var mu sync.Mutex
	var a, c []string
	b.Subscribe("a", 100, func(e Event) { mu.Lock(); a = append(a, e.Name); mu.Unlock() })
	b.Subscribe("c", 100, func(e Event) {
		mu.Lock()
		c = append(c, e.Name)
		mu.Unlock()
		if e.Level != LevelInfo || e.At.IsZero() {
			t.Errorf("defaults not applied: %+v", e)
		}
	})
	for _, n := range []string{"one", "two", "three"} {
		b.Publish(Event{Name: n})
	}
	b.Close()
	if len(a) != 3 || a[0] != "one" || a[2] != "three" || len(c) != 3 {
		t.Fatalf("a=%v c=%v", a, c)
	}
	b.Publish(Event{Name: "after close"}) // ignored, no panic
	b.Close()
}

func TestSlowSubscriberDropsInsteadOfBlocking(t *testing.T) {
	b := NewBus(nil)
	release := make(chan struct{})
	slow := b.Subscribe("slow", 2, func(Event) { <-release })
	done := make(chan struct{})
	go func() {
		for i := 0; i < 100; i++ {
			b.Publish(Event{Name: "x"})
		}
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Publish blocked on a slow subscriber")
	}
	if slow.Dropped() < 90 {
		t.Fatalf("dropped %d, want most of 100", slow.Dropped())
	}
	close(release)
	b.Close()
}
