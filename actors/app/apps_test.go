package app

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type fakeApps struct {
	mu      sync.Mutex
	version map[string]int
	loads   atomic.Int32
	gate    chan struct{} // when set, loads wait on it
}

func (f *fakeApps) load(ctx context.Context, id string) (int, error) {
	f.loads.Add(1)
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return 0, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	v, ok := f.version[id]
	if !ok {
		return 0, errNoApp
	}
	return v, nil
}

func (f *fakeApps) set(id string, v int) {
	f.mu.Lock()
	f.version[id] = v
	f.mu.Unlock()
}

var errNoApp = errors.New("no such app")

func TestSnapshotLoadsOnceAndServesFromTheActor(t *testing.T) {
	f := &fakeApps{version: map[string]int{"a": 1}, gate: make(chan struct{})}
	dir := NewApps(f.load, AppsConfig{})
	defer dir.Close()
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := dir.Snapshot(context.Background(), "a")
			if err != nil || v != 1 {
				errs <- errors.Join(err, errors.New("wrong snapshot"))
			}
		}()
	}
	time.Sleep(50 * time.Millisecond) // let the requests queue behind the first load
	close(f.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := f.loads.Load(); n != 1 {
		t.Fatalf("%d loads for 20 concurrent requests, want 1", n)
	}
	for range 100 {
		if _, err := dir.Snapshot(context.Background(), "a"); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.loads.Load(); n != 1 {
		t.Fatalf("%d loads after cached requests, want 1", n)
	}
}

func TestInvalidateMakesTheNextRequestSeeTheChange(t *testing.T) {
	f := &fakeApps{version: map[string]int{"a": 1}}
	dir := NewApps(f.load, AppsConfig{})
	defer dir.Close()
	if v, _ := dir.Snapshot(context.Background(), "a"); v != 1 {
		t.Fatalf("got %d", v)
	}
	f.set("a", 2)
	dir.Invalidate("a")
	if v, err := dir.Snapshot(context.Background(), "a"); v != 2 || err != nil {
		t.Fatalf("after invalidate got %d, %v; want 2", v, err)
	}
	dir.Invalidate("unknown") // no actor: nothing happens, nothing spawns
	if dir.Len() != 1 {
		t.Fatalf("%d actors, want 1", dir.Len())
	}
}

func TestStaleSnapshotIsRefreshedInTheBackground(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Now().UnixNano())
	f := &fakeApps{version: map[string]int{"a": 1}}
	dir := NewApps(f.load, AppsConfig{Refresh: time.Minute, Now: func() time.Time { return time.Unix(0, now.Load()) }})
	defer dir.Close()
	_, _ = dir.Snapshot(context.Background(), "a")
	f.set("a", 2)
	now.Add(int64(2 * time.Minute))
	// The stale snapshot is still served at once, and a reload starts.
	if v, _ := dir.Snapshot(context.Background(), "a"); v != 1 {
		t.Fatalf("stale request got %d, want the served 1", v)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if v, _ := dir.Snapshot(context.Background(), "a"); v == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the background refresh never landed")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestUnknownAppLeavesNoActor(t *testing.T) {
	f := &fakeApps{version: map[string]int{}}
	dir := NewApps(f.load, AppsConfig{})
	defer dir.Close()
	for range 3 {
		if _, err := dir.Snapshot(context.Background(), "ghost"); !errors.Is(err, errNoApp) {
			t.Fatalf("err %v, want the loader's", err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for dir.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d actors left for unknown apps", dir.Len())
		}
		time.Sleep(5 * time.Millisecond)
	}
	if f.loads.Load() != 3 {
		t.Fatalf("errors must not be cached: %d loads", f.loads.Load())
	}
}

func TestIdleActorsPassivate(t *testing.T) {
	f := &fakeApps{version: map[string]int{"a": 1, "b": 1}}
	dir := NewApps(f.load, AppsConfig{Idle: 50 * time.Millisecond})
	defer dir.Close()
	_, _ = dir.Snapshot(context.Background(), "a")
	_, _ = dir.Snapshot(context.Background(), "b")
	deadline := time.Now().Add(30 * time.Second)
	for dir.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatalf("%d idle actors still running", dir.Len())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A passivated app comes back on the next request, with a fresh load.
	if v, err := dir.Snapshot(context.Background(), "a"); v != 1 || err != nil {
		t.Fatalf("after passivation: %d %v", v, err)
	}
	if n := f.loads.Load(); n != 3 {
		t.Fatalf("%d loads, want 3", n)
	}
}

func TestCloseAnswersWaitersAndRefusesNewRequests(t *testing.T) {
	f := &fakeApps{version: map[string]int{"a": 1}, gate: make(chan struct{})}
	dir := NewApps(f.load, AppsConfig{})
	done := make(chan error, 1)
	go func() {
		_, err := dir.Snapshot(context.Background(), "a")
		done <- err
	}()
	time.Sleep(30 * time.Millisecond)
	dir.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Fatal("a waiter got a snapshot from a closed directory")
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a waiter was left hanging by Close")
	}
	if _, err := dir.Snapshot(context.Background(), "a"); !errors.Is(err, ErrClosed) {
		t.Fatalf("after Close: %v", err)
	}
}

func BenchmarkSnapshot(b *testing.B) {
	f := &fakeApps{version: map[string]int{"a": 1}}
	dir := NewApps(f.load, AppsConfig{})
	defer dir.Close()
	_, _ = dir.Snapshot(context.Background(), "a")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if _, err := dir.Snapshot(context.Background(), "a"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestBusyActorPassivatesWithoutARace: an AppActor whose idle time is shorter than the
// gaps between its messages, asked again and again, is race-free (the race detector
// reported protoactor's receive timeout, whose timer goroutine writes the actor's context
// while the actor reads it; the passivation timer only sends a message) and stops once
// nothing asks any more.
func TestBusyActorPassivatesWithoutARace(t *testing.T) {
	f := &fakeApps{version: map[string]int{"a": 1}}
	dir := NewApps(f.load, AppsConfig{Idle: time.Millisecond})
	defer dir.Close()
	for i := 0; i < 300; i++ {
		if v, err := dir.Snapshot(context.Background(), "a"); err != nil || v != 1 {
			t.Fatalf("snapshot %d: %d %v", i, v, err)
		}
		if i%20 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for dir.Len() != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the idle actor was not passivated")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestSnapshotAfterInvalidateIsNeverTheOldOne: Snapshot answers a published snapshot
// without asking the actor, but never one loaded before an Invalidate that returned, while
// other goroutines read the app all along.
func TestSnapshotAfterInvalidateIsNeverTheOldOne(t *testing.T) {
	f := &fakeApps{version: map[string]int{"a": 0}}
	dir := NewApps(f.load, AppsConfig{})
	defer dir.Close()
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for range 2 {
		readers.Add(1)
		go func() {
			defer readers.Done()
			for {
				select {
				case <-stop:
					return
				default:
					_, _ = dir.Snapshot(context.Background(), "a")
				}
			}
		}()
	}
	defer func() { close(stop); readers.Wait() }()
	for i := 1; i <= 200; i++ {
		f.set("a", i)
		dir.Invalidate("a")
		for range 3 {
			if v, err := dir.Snapshot(context.Background(), "a"); err != nil || v != i {
				t.Fatalf("after invalidation %d: got %d, %v", i, v, err)
			}
		}
	}
	before := f.loads.Load()
	for range 100 {
		if v, _ := dir.Snapshot(context.Background(), "a"); v != 200 {
			t.Fatalf("got %d, want 200", v)
		}
	}
	if n := f.loads.Load() - before; n != 0 {
		t.Fatalf("%d loads without a change, want 0", n)
	}
	dir.Close()
	if _, err := dir.Snapshot(context.Background(), "a"); !errors.Is(err, ErrClosed) {
		t.Fatalf("a published snapshot after Close: %v, want ErrClosed", err)
	}
}
