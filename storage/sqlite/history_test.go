package sqlite

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/keyward/keyward/storage"
)

// TestUpgradeMovesFinishedDeliveriesToHistory opens a database made before migration 33,
// whose queue holds pending and finished deliveries: after the upgrade the queue holds
// the pending one alone, the history the finished ones (as they were), each still read
// by id, and the queue's claims answer the pending one only.
func TestUpgradeMovesFinishedDeliveriesToHistory(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "keyward.db")
	s := openBeforeMigration(t, path, 33)
	for _, row := range []struct{ id, state string }{{"d-pending", "pending"}, {"d-delivered", "delivered"}, {"d-failed", "failed"}} {
		if _, err := s.w.ExecContext(ctx, `INSERT INTO webhook_deliveries (id, app_id, integration_id, event_id, event, payload,
	state, attempts, next_attempt_at, lease_owner, lease_until, last_error, created_at, updated_at, sent)
VALUES (?, 'app', 'int', 'evt-'||?, 'user.login', x'7b7d', ?, 1, 1000, '', 0, 'last', 1, 2000, x'73656e74')`,
			row.id, row.id, row.state); err != nil {
			t.Fatalf("insert %s before migration 33: %v", row.id, err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	s2 := openTemp(t, path)
	count := func(table string) int {
		var n int
		if err := s2.r.QueryRowContext(ctx, `SELECT count(*) FROM `+table).Scan(&n); err != nil {
			t.Fatalf("count %s: %v", table, err)
		}
		return n
	}
	if q, h := count("webhook_deliveries"), count("webhook_history"); q != 1 || h != 2 {
		t.Errorf("after the upgrade: %d in the queue, %d in the history; want 1 and 2", q, h)
	}
	for _, id := range []string{"d-pending", "d-delivered", "d-failed"} {
		var got storage.Delivery
		if _, err := s2.UpdateDelivery(ctx, id, func(d *storage.Delivery) error {
			got = *d
			return errPeekTest
		}); !errors.Is(err, errPeekTest) {
			t.Errorf("read %s after the upgrade: %v", id, err)
			continue
		}
		if got.ID != id || got.EventID != "evt-"+id || string(got.Sent) != "sent" || got.LastError != "last" || got.UpdatedAt.UnixMilli() != 2000 {
			t.Errorf("%s after the upgrade = %+v, want it as it was", id, got)
		}
	}
	if n, err := s2.MoveFinishedDeliveries(ctx, 10); err != nil || n != 0 {
		t.Errorf("MoveFinishedDeliveries after the upgrade = (%d, %v), want (0, nil)", n, err)
	}
}

// errPeekTest aborts an UpdateDelivery that only reads.
var errPeekTest = errors.New("read only")
