package sqlite

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/keyward/keyward/storage"
)

// BenchmarkInsertLogs times the log writer's inserts: batches of 500 socket-connect
// entries over 20 apps, as a crowd of sockets opening makes them (ns/row).
func BenchmarkInsertLogs(b *testing.B) {
	s := openTemp(b, filepath.Join(b.TempDir(), "k.db"))
	apps := make([]string, 20)
	for i := range apps {
		apps[i] = uuid.NewString()
	}
	b.ResetTimer()
	n := 0
	for b.Loop() {
		batch := make([]storage.LogEntry, 500)
		for i := range batch {
			n++
			id, _ := uuid.NewV7()
			batch[i] = storage.LogEntry{ID: id.String(), AppID: apps[n%20], Event: "ws.connect", Message: "client socket connected", Username: fmt.Sprintf("user%d", n),
				IP: "127.0.0.1", Level: "debug", Data: fmt.Sprintf(`{"userId":"%s"}`, uuid.NewString()), CreatedAt: time.Now()}
		}
		if err := s.InsertLogs(b.Context(), batch); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n), "ns/row")
}
