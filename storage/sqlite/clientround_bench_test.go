package sqlite

import (
	"fmt"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

// BenchmarkSaveClientRound times one group-commit round of 32 new client sessions (what a
// round of concurrent inits writes), without events or logins; cpu-ns/op is the process's CPU time per round.
func BenchmarkSaveClientRound(b *testing.B) {
	s := openTemp(b, filepath.Join(b.TempDir(), "keyward.db"))
	const perRound = 32
	now := time.Now()
	n := 0
	cpu := func() time.Duration {
		var ru syscall.Rusage
		_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	start := cpu()
	for b.Loop() {
		batch := make([]storage.ClientSession, perRound)
		for i := range batch {
			n++
			batch[i] = storage.ClientSession{TokenHash: fmt.Sprintf("tok-%d", n), AppID: "app", AccountID: "acc",
				IP: "127.0.0.1", Version: "1.0", CreatedAt: now, LoginAt: now, ExpiresAt: now.Add(time.Hour)}
		}
		if err := s.SaveClientRound(b.Context(), batch, nil); err != nil {
			b.Fatal(err)
		}
	}
	// CPU time says more than wall time on a shared machine.
	b.ReportMetric(float64(cpu()-start)/float64(b.N), "cpu-ns/op")
}
