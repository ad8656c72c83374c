package storagetest

import (
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

var revocationTests = []subtest{
	{"RevocationRoundTrip", testRevocationRoundTrip},
	{"RevocationKeepsLaterExpiry", testRevocationKeepsLaterExpiry},
	{"RevocationPurge", testRevocationPurge},
	{"RevocationConcurrent", testRevocationConcurrent},
}

// wantRevoked fails unless IsTokenRevoked(id, at) answers want.
func wantRevoked(t *testing.T, s storage.Store, id string, at time.Time, want bool) {
	t.Helper()
	got, err := s.IsTokenRevoked(t.Context(), id, at)
	if err != nil {
		t.Fatalf("IsTokenRevoked(%s, %s): %v", id, at.Format(time.RFC3339Nano), err)
	}
	if got != want {
		t.Fatalf("IsTokenRevoked(%s, %s) = %v, want %v", id, at.Format(time.RFC3339Nano), got, want)
	}
}

func mustRevoke(t *testing.T, s storage.Store, id string, until time.Time) {
	t.Helper()
	if err := s.RevokeToken(t.Context(), id, until); err != nil {
		t.Fatalf("RevokeToken(%s): %v", id, err)
	}
}

func testRevocationRoundTrip(t *testing.T, s storage.Store) {
	id := uniq("jti-")
	wantRevoked(t, s, id, base, false)
	mustRevoke(t, s, id, ms(time.Hour))
	wantRevoked(t, s, id, base, true)
	// Revoked strictly before its expiry, to the millisecond.
	wantRevoked(t, s, id, ms(time.Hour-time.Millisecond), true)
	wantRevoked(t, s, id, ms(time.Hour), false)
	wantRevoked(t, s, uniq("jti-other-"), base, false)
}

func testRevocationKeepsLaterExpiry(t *testing.T, s storage.Store) {
	id := uniq("jti-")
	mustRevoke(t, s, id, ms(time.Hour))
	mustRevoke(t, s, id, ms(10*time.Minute))
	wantRevoked(t, s, id, ms(30*time.Minute), true)
	mustRevoke(t, s, id, ms(2*time.Hour))
	wantRevoked(t, s, id, ms(90*time.Minute), true)
	wantRevoked(t, s, id, ms(2*time.Hour), false)
}

func testRevocationPurge(t *testing.T, s storage.Store) {
	short, long := uniq("jti-short-"), uniq("jti-long-")
	mustRevoke(t, s, short, ms(time.Minute))
	mustRevoke(t, s, long, ms(time.Hour))
	n, err := s.PurgeRevocations(t.Context(), ms(time.Minute-time.Millisecond))
	if err != nil || n != 0 {
		t.Fatalf("PurgeRevocations before any expiry = %d, %v; want 0", n, err)
	}
	// An expiry at the purge instant is purged: the token is refused by its expiry then.
	n, err = s.PurgeRevocations(t.Context(), ms(time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("PurgeRevocations = %d, %v; want 1", n, err)
	}
	// Asked at an earlier time, only the record can answer: the purged one is gone, the
	// other stays.
	wantRevoked(t, s, short, base, false)
	wantRevoked(t, s, long, base, true)
	if n, err := s.PurgeRevocations(t.Context(), ms(time.Minute)); err != nil || n != 0 {
		t.Fatalf("second PurgeRevocations = %d, %v; want 0", n, err)
	}
	// A purged id can be revoked again.
	mustRevoke(t, s, short, ms(time.Hour))
	wantRevoked(t, s, short, base, true)
}

// testRevocationConcurrent: revocations of one id racing all succeed, and the latest
// expiry wins whatever the order.
func testRevocationConcurrent(t *testing.T, s storage.Store) {
	id := uniq("jti-")
	const n = 8
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- s.RevokeToken(t.Context(), id, ms(time.Duration(i+1)*time.Minute))
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("concurrent RevokeToken: %v", err)
		}
	}
	wantRevoked(t, s, id, ms(n*time.Minute-time.Millisecond), true)
	wantRevoked(t, s, id, ms(n*time.Minute), false)
}

// BenchRevocationCheck times IsTokenRevoked, the read every dashboard request makes, on a
// store holding 10,000 live revocations; half the ids asked are revoked.
func BenchRevocationCheck(b *testing.B, newStore func(b *testing.B) storage.Store) {
	s := newStore(b)
	const n = 10_000
	now := time.Now()
	ids := make([]string, 2*n)
	for i := range ids {
		ids[i] = uniq("bench-jti-")
		if i%2 == 0 {
			if err := s.RevokeToken(b.Context(), ids[i], now.Add(time.Hour)); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ResetTimer()
	i := 0
	for b.Loop() {
		if _, err := s.IsTokenRevoked(b.Context(), ids[i%len(ids)], now); err != nil {
			b.Fatal(err)
		}
		i++
	}
}
