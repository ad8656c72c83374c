package audit_test

import (
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/sqlite"
)

func openStore(t *testing.T) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(t.Context(), sqlite.Config{Path: filepath.Join(t.TempDir(), "k.db")})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// TestCloseWritesEverything: every entry recorded before Close is stored (Record returns
// once it is); entries recorded after Close are written at once.
func TestCloseWritesEverything(t *testing.T) {
	store := openStore(t)
	svc := audit.New(store, audit.Config{BatchSize: 10_000, Queue: 100}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	const n = 1000 // more than the queue: Record blocks rather than drops
	for range n {
		if err := svc.Record(t.Context(), storage.AuditEntry{AccountID: "acc", Method: "POST", Route: "/api/apps"}); err != nil {
			t.Fatal(err)
		}
	}
	svc.Close()
	if err := svc.Record(t.Context(), storage.AuditEntry{AccountID: "acc", Method: "DELETE", Route: "/api/apps/:appId"}); err != nil {
		t.Fatal(err)
	}
	_, total, err := store.ListAudit(t.Context(), storage.AuditQuery{AccountID: "acc"})
	if err != nil || total != n+1 {
		t.Fatalf("stored %d entries (%v), want %d", total, err, n+1)
	}
}

// TestRetention: the writer removes entries past the retention when it starts (and hourly).
func TestRetention(t *testing.T) {
	store := openStore(t)
	now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
	old := storage.AuditEntry{ID: "old", AccountID: "acc", CreatedAt: now.Add(-91 * 24 * time.Hour)}
	young := storage.AuditEntry{ID: "young", AccountID: "acc", CreatedAt: now.Add(-89 * 24 * time.Hour)}
	if err := store.AppendAudit(t.Context(), []storage.AuditEntry{old, young}); err != nil {
		t.Fatal(err)
	}
	svc := audit.New(store, audit.Config{Now: func() time.Time { return now }}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	svc.Close()
	list, _, err := store.ListAudit(t.Context(), storage.AuditQuery{})
	if err != nil || len(list) != 1 || list[0].ID != "young" {
		t.Fatalf("left %+v, %v", list, err)
	}
}

// BenchmarkRecord is what an audited request adds on its path: storing one entry (a group
// commit shared with the concurrent ones).
func BenchmarkRecord(b *testing.B) {
	store, err := sqlite.Open(b.Context(), sqlite.Config{Path: filepath.Join(b.TempDir(), "k.db")})
	if err != nil {
		b.Fatal(err)
	}
	defer store.Close()
	svc := audit.New(store, audit.Config{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	b.SetParallelism(16) // concurrent requests, whose entries share group commits
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			_ = svc.Record(b.Context(), storage.AuditEntry{AccountID: "acc", Method: "PATCH", Route: "/api/apps/:appId/users/:userId", Before: `{"level":1}`, After: `{"level":2}`})
		}
	})
	svc.Close()
}
