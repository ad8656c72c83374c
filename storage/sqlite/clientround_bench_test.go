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
	now := time.Now()
	benchRounds(b, func(s *Store, n int) error {
		batch := make([]storage.ClientSession, roundSize)
		for i := range batch {
			batch[i] = storage.ClientSession{TokenHash: fmt.Sprintf("tok-%d", n+i), AppID: "app", AccountID: "acc",
				IP: "127.0.0.1", Version: "1.0", CreatedAt: now, LoginAt: now, ExpiresAt: now.Add(time.Hour)}
		}
		return s.SaveClientRound(b.Context(), batch, nil)
	})
}

// BenchmarkExtendClientRound times one round of 32 calls' new expiries (ExtendOnly) of
// stored sessions, what a round of heartbeats writes; cpu-ns/op is the process's CPU time
// per round.
func BenchmarkExtendClientRound(b *testing.B) {
	now := time.Now()
	const stored = 4096
	benchRoundsAfter(b, func(s *Store) error {
		batch := make([]storage.ClientSession, stored)
		for i := range batch {
			batch[i] = storage.ClientSession{TokenHash: fmt.Sprintf("tok-%d", i), AppID: "app", AccountID: "acc",
				IP: "127.0.0.1", Version: "1.0", CreatedAt: now, LoginAt: now, ExpiresAt: now.Add(time.Hour)}
		}
		return s.SaveClientRound(b.Context(), batch, nil)
	}, func(s *Store, n int) error {
		batch := make([]storage.ClientSession, roundSize)
		for i := range batch {
			batch[i] = storage.ClientSession{TokenHash: fmt.Sprintf("tok-%d", (n+i)%stored), AppID: "app", AccountID: "acc",
				IP: "127.0.0.1", Version: "1.0", CreatedAt: now, LoginAt: now,
				ExpiresAt: now.Add(time.Hour + time.Duration(n+i)*time.Millisecond), ExtendOnly: true}
		}
		return s.SaveClientRound(b.Context(), batch, nil)
	})
}

// BenchmarkAppendEvents times one append of 32 events of one app (a round of concurrent
// inits' events); cpu-ns/op is the process's CPU time per append.
func BenchmarkAppendEvents(b *testing.B) {
	now := time.Now()
	benchRounds(b, func(s *Store, n int) error {
		evs := make([]storage.EventRecord, roundSize)
		for i := range evs {
			evs[i] = storage.EventRecord{ID: fmt.Sprintf("ev-%d", n+i), AppID: "app", Type: "user.login",
				Payload: []byte(`{"user":"someone","ip":"127.0.0.1"}`), At: now}
		}
		return s.AppendEvents(b.Context(), evs)
	})
}

// roundSize is how many records a benchmarked round writes.
const roundSize = 32

// benchRounds runs round on a fresh store once per iteration, n being the number of
// records written before it (so ids never repeat), and reports cpu-ns/op: CPU time says
// more than wall time on a shared machine.
func benchRounds(b *testing.B, round func(s *Store, n int) error) {
	benchRoundsAfter(b, func(*Store) error { return nil }, round)
}

// benchRoundsAfter is benchRounds on a store that setup has filled first.
func benchRoundsAfter(b *testing.B, setup func(s *Store) error, round func(s *Store, n int) error) {
	s := openTemp(b, filepath.Join(b.TempDir(), "keyward.db"))
	if err := setup(s); err != nil {
		b.Fatal(err)
	}
	n := 0
	start := processCPU()
	for b.Loop() {
		if err := round(s, n); err != nil {
			b.Fatal(err)
		}
		n += roundSize
	}
	b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
}

// processCPU is the process's CPU time so far (user and system).
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
