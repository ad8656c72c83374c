package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"time"

	"github.com/keyward/keyward/storage"
)

// The parts of a bulk request's audit entry (storage.AuditParts, issue 21): each record's
// write stores its part in its own transaction (inWriteTx), so a changed record always
// has its part; SettleAuditParts merges a request's parts into one entry of audit_log and
// removes them in one transaction. Parts a stopped process left are settled by
// RecoverAudit at the next start (the audit writer runs it at start and periodically).

// insertAuditPart stores e, one record's part of the entry group, in the change's tx.
func insertAuditPart(ctx context.Context, tx *sql.Tx, group string, e storage.AuditEntry) error {
	doc, err := json.Marshal(e)
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO audit_parts (id, group_id, entry, created_at) VALUES (?, ?, ?, ?)`,
		e.ID, group, string(doc), toMillis(storage.Now()))
	return err
}

// SettleAuditParts implements storage.AuditPartSettler.
func (s *Store) SettleAuditParts(ctx context.Context, group string) (bool, error) {
	settled := false
	err := s.inWriteTx(storage.WithoutEventOutbox(ctx), "settle audit parts", func(tx *sql.Tx) error {
		var err error
		settled, err = s.settlePartsTx(ctx, tx, group)
		return err
	})
	return settled, err
}

// settlePartsTx appends the entry of group's parts and removes them, in tx.
func (s *Store) settlePartsTx(ctx context.Context, tx *sql.Tx, group string) (bool, error) {
	rows, err := tx.QueryContext(ctx, `SELECT entry FROM audit_parts WHERE group_id = ? ORDER BY created_at, rowid`, group)
	if err != nil {
		return false, wrap("settle audit parts", err)
	}
	var parts []storage.AuditEntry
	for rows.Next() {
		var doc string
		var e storage.AuditEntry
		if err := rows.Scan(&doc); err != nil {
			rows.Close()
			return false, wrap("settle audit parts", err)
		}
		if err := json.Unmarshal([]byte(doc), &e); err != nil {
			rows.Close()
			return false, wrap("settle audit parts", err)
		}
		parts = append(parts, e)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return false, wrap("settle audit parts", err)
	}
	if len(parts) == 0 {
		return false, nil
	}
	e, err := storage.MergeAuditParts(parts)
	if err != nil {
		return false, wrap("settle audit parts", err)
	}
	if err := s.appendAuditTx(ctx, tx, []storage.AuditEntry{e}); err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, `DELETE FROM audit_parts WHERE group_id = ?`, group); err != nil {
		return false, wrap("settle audit parts", err)
	}
	return true, nil
}

// RecoverAudit implements storage.AuditRecoverer: on SQLite an entry of one write is
// always in that write's transaction, so only the parts of bulk requests can be left
// (their process stopped before the request ended). Every group whose newest part is at
// least minAge old is settled; it answers how many entries it appended.
func (s *Store) RecoverAudit(ctx context.Context, minAge time.Duration) (int, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT group_id FROM audit_parts GROUP BY group_id HAVING max(created_at) <= ?`,
		toMillis(storage.Now().Add(-minAge)))
	if err != nil {
		return 0, wrap("recover audit parts", err)
	}
	var groups []string
	for rows.Next() {
		var g string
		if err := rows.Scan(&g); err != nil {
			rows.Close()
			return 0, wrap("recover audit parts", err)
		}
		groups = append(groups, g)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, wrap("recover audit parts", err)
	}
	n := 0
	for _, g := range groups {
		settled, err := s.SettleAuditParts(ctx, g)
		if err != nil {
			return n, err
		}
		if settled {
			n++
		}
	}
	return n, nil
}
