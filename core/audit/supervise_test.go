package audit_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/internal/supervise"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/sqlite"
)

// panickyStore is a real SQLite store whose audit writes and purge panic once each, on
// purpose, when armed.
type panickyStore struct {
	*sqlite.Store
	append, purge atomic.Bool
}

func (s *panickyStore) AppendAudit(ctx context.Context, es []storage.AuditEntry) error {
	if s.append.CompareAndSwap(true, false) {
		panic("on purpose in AppendAudit")
	}
	return s.Store.AppendAudit(ctx, es)
}

func (s *panickyStore) DeleteAuditBefore(ctx context.Context, before time.Time) (int, error) {
	if s.purge.CompareAndSwap(true, false) {
		panic("on purpose in DeleteAuditBefore")
	}
	return s.Store.DeleteAuditBefore(ctx, before)
}

// TestWriterPanics: the writer's purge panics as it starts: the owner counts it and runs
// the writer again, and the entry recorded meanwhile is stored. A write that panics answers
// its caller ErrNotStored instead of leaving it waiting, and the next entry is stored. The
// owner's stop writes what waits; Record then writes at once.
func TestWriterPanics(t *testing.T) {
	store := &panickyStore{Store: openStore(t)}
	store.purge.Store(true)
	owner, err := supervise.New(supervise.Config{MinBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	svc := audit.New(store, audit.Config{Goroutines: owner}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	defer svc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	entry := storage.AuditEntry{AccountID: "acc", Method: "POST", Route: "/api/apps"}
	if err := svc.Record(ctx, entry); err != nil {
		t.Fatalf("Record across the purge's panic: %v", err)
	}
	if owner.Panics("audit-writer") != 1 || owner.Restarts("audit-writer") != 1 {
		t.Fatalf("audit-writer: %d panics, %d restarts; want 1, 1", owner.Panics("audit-writer"), owner.Restarts("audit-writer"))
	}
	store.append.Store(true)
	if err := svc.Record(ctx, entry); !errors.Is(err, audit.ErrNotStored) {
		t.Fatalf("Record whose write panicked = %v, want ErrNotStored", err)
	}
	if err := svc.Record(ctx, entry); err != nil {
		t.Fatalf("Record after the write's panic: %v", err)
	}
	if err := owner.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if err := svc.Record(ctx, entry); err != nil {
		t.Fatalf("Record after the owner's stop: %v", err)
	}
	_, total, err := store.ListAudit(ctx, storage.AuditQuery{AccountID: "acc"})
	if err != nil || total != 3 {
		t.Fatalf("stored %d entries (%v), want 3", total, err)
	}
}
