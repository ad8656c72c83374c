package mongo

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/testenv"
	"github.com/keyward/keyward/storage"
)

// burstCalls is the size of the burst of TestBurstIsNotAnOutage: the 50 concurrent
// registers of the field report, spread over two nodes, made about half as many store
// calls at once on each.
const burstCalls = 100

// TestBurstIsNotAnOutage opens a store with the production connection settings on a
// FerretDB of its own and sends it a burst of concurrent writes and reads while the
// machine's cores are busy (the test spins them, as a burst of password hashes does): a
// healthy server that is only slow must not be
// reported unavailable. The tight timeouts that find a frozen server within a second
// once made a cold pool's connection waits and handshakes call it down.
func TestBurstIsNotAnOutage(t *testing.T) {
	uri, _ := testenv.StartFerretDB(t)
	ctx := t.Context()
	s, err := Open(ctx, Config{URI: uri, Database: testenv.UniqueName("kwtest_")})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })

	// Busy cores for the length of the burst (bounded: the burst ends, or 30 s).
	stop := make(chan struct{})
	var spinners sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		spinners.Add(1)
		go func() {
			defer spinners.Done()
			deadline := time.Now().Add(30 * time.Second)
			for n := 0; ; n++ {
				if n%1024 == 0 {
					select {
					case <-stop:
						return
					default:
					}
					if time.Now().After(deadline) {
						return
					}
				}
			}
		}()
	}

	var unavailable atomic.Int64
	var other atomic.Int64
	var firstOther atomic.Value
	var first atomic.Value
	var wg sync.WaitGroup
	for i := range burstCalls {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := fmt.Sprintf("burst%d", i)
			err := s.CreateAccount(ctx, storage.Account{ID: id, Username: id, Email: id + "@example.com", CreatedAt: storage.Now()})
			if err == nil {
				_, err = s.GetAccount(ctx, id)
			}
			switch {
			case errors.Is(err, storage.ErrUnavailable):
				unavailable.Add(1)
				first.CompareAndSwap(nil, err.Error())
			case err != nil:
				other.Add(1)
				firstOther.CompareAndSwap(nil, err.Error())
			}
		}()
	}
	wg.Wait()
	close(stop)
	spinners.Wait()
	if unavailable.Load() != 0 || other.Load() != 0 {
		t.Fatalf("%d of %d calls unavailable, %d failed otherwise, on a healthy server; first: %v; first other: %v",
			unavailable.Load(), burstCalls, other.Load(), first.Load(), firstOther.Load())
	}
}
