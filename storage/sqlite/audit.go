package sqlite

import (
	"context"
	"time"

	"github.com/keyward/keyward/storage"
)

var _ storage.AuditStore = (*Store)(nil)

const auditCols = `id, account_id, app_id, actor_type, actor_id, actor_name, ip, method, route, path, record_type, record_id, status, before, after, created_at`

func scanAudit(row scanner) (storage.AuditEntry, error) {
	var e storage.AuditEntry
	err := row.Scan(&e.ID, &e.AccountID, &e.AppID, &e.ActorType, &e.ActorID, &e.ActorName, &e.IP, &e.Method, &e.Route, &e.Path,
		&e.RecordType, &e.RecordID, &e.Status, &e.Before, &e.After, timeCol{&e.CreatedAt})
	return e, err
}

// AppendAudit implements storage.AuditStore in one transaction; ids already stored (a
// retried batch) are skipped.
func (s *Store) AppendAudit(ctx context.Context, entries []storage.AuditEntry) error {
	rows := make([][]any, len(entries))
	for i, e := range entries {
		rows[i] = []any{e.ID, e.AccountID, e.AppID, e.ActorType, e.ActorID, e.ActorName, e.IP, e.Method, e.Route, e.Path,
			e.RecordType, e.RecordID, e.Status, e.Before, e.After, toMillis(e.CreatedAt)}
	}
	return s.insertAll(ctx, "append audit", `INSERT OR IGNORE INTO audit_log (`+auditCols+`) VALUES (`+placeholders(16)+`)`, rows)
}

// ListAudit implements storage.AuditStore.
func (s *Store) ListAudit(ctx context.Context, q storage.AuditQuery) ([]storage.AuditEntry, int, error) {
	var w where
	w.add("1 = 1")
	for col, v := range map[string]string{"account_id": q.AccountID, "app_id": q.AppID, "actor_id": q.ActorID, "record_type": q.RecordType} {
		if v != "" {
			w.add(col+" = ?", v)
		}
	}
	if !q.Since.IsZero() {
		w.add("created_at >= ?", q.Since.UnixMilli())
	}
	if !q.Until.IsZero() {
		w.add("created_at < ?", q.Until.UnixMilli())
	}
	return listPage(ctx, s, "list audit", "audit_log", auditCols, w, orderBy("created_at", true), q.Page, scanAudit)
}

// DeleteAuditBefore implements storage.AuditStore.
func (s *Store) DeleteAuditBefore(ctx context.Context, t time.Time) (int, error) {
	n, err := execCount(ctx, s.w, `DELETE FROM audit_log WHERE created_at < ?`, t.UnixMilli())
	if err != nil {
		return 0, wrap("delete audit before", err)
	}
	return n, nil
}
