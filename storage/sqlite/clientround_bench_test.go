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
	start := processCPU()
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
	b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
}

// BenchmarkAppendEvents times one append of 32 events of one app (a round of concurrent
// inits' events); cpu-ns/op is the process's CPU time per append.
func BenchmarkAppendEvents(b *testing.B) {
	s := openTemp(b, filepath.Join(b.TempDir(), "keyward.db"))
	const perRound = 32
	now := time.Now()
	n := 0
	start := processCPU()
	for b.Loop() {
		evs := make([]storage.EventRecord, perRound)
		for i := range evs {
			n++
			evs[i] = storage.EventRecord{ID: fmt.Sprintf("ev-%d", n), AppID: "app", Type: "user.login",
				Payload: []byte(`{"user":"someone","ip":"127.0.0.1"}`), At: now}
		}
		if err := s.AppendEvents(b.Context(), evs); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
}

// processCPU is the process's CPU time so far (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
