package accounts

import (
	"context"
	"runtime"
	"sync"
	"testing"

	"github.com/keyward/keyward/core/passwords"
)

// BenchmarkArgon2idLogin measures the password check of one owner sign-in at the production
// default (OWASP's minimum: 19 MiB, t=2, p=1), and a burst of twice as many sign-ins as the
// hasher's concurrency bound (NumCPU hashes at once, so at most NumCPU × 19 MiB).
//
//	go test -run '^$' -bench Argon2idLogin -benchtime 20x ./core/accounts/
func BenchmarkArgon2idLogin(b *testing.B) {
	h := passwords.NewHasher(passwords.OWASP, 0)
	ctx := context.Background()
	hash, err := h.Hash(ctx, "Correct-Horse-9")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("one", func(b *testing.B) {
		for b.Loop() {
			if err := h.Verify(ctx, hash, "Correct-Horse-9"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("burst", func(b *testing.B) {
		n := 2 * runtime.NumCPU()
		b.ReportMetric(float64(runtime.NumCPU())*19, "MiB-bound")
		for b.Loop() {
			var wg sync.WaitGroup
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if err := h.Verify(ctx, hash, "Correct-Horse-9"); err != nil {
						b.Error(err)
					}
				}()
			}
			wg.Wait()
		}
	})
}
