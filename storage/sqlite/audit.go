package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/keyward/keyward/storage"
)

var _ storage.AuditStore = (*Store)(nil)

const auditCols = `id, account_id, app_id, actor_type, actor_id, actor_name, ip, method, route, path, record_type, record_id, status, before, after, created_at, seq, prev_hash, hash`

func scanAudit(row scanner) (storage.AuditEntry, error) {
	var e storage.AuditEntry
	err := row.Scan(&e.ID, &e.AccountID, &e.AppID, &e.ActorType, &e.ActorID, &e.ActorName, &e.IP, &e.Method, &e.Route, &e.Path,
		&e.RecordType, &e.RecordID, &e.Status, &e.Before, &e.After, timeCol{&e.CreatedAt}, &e.Seq, &e.PrevHash, &e.Hash)
	return e, err
}

// chainLink is the end of an account's chain: its last sequence and hash.
type chainLink struct {
	seq  int64
	hash string
}

// AppendAudit implements storage.AuditStore in one IMMEDIATE transaction: no other writer,
// in this process or another on the same file, comes between reading an account's last
// entry and appending after it. Ids already stored (a retried batch) are skipped.
func (s *Store) AppendAudit(ctx context.Context, entries []storage.AuditEntry) error {
	if len(entries) == 0 {
		return nil
	}
	return s.inWriteTx(ctx, "append audit", func(tx *sql.Tx) error {
		return s.appendAuditTx(ctx, tx, entries)
	})
}

// appendAuditTx appends entries in tx (AppendAudit's, or a change's own transaction:
// storage.AuditOutbox, inWriteTx).
func (s *Store) appendAuditTx(ctx context.Context, tx *sql.Tx, entries []storage.AuditEntry) error {
	// An id stored already inserts nothing (a retried batch) and leaves the chain's end.
	insert, err := tx.PrepareContext(ctx, `INSERT INTO audit_log (`+auditCols+`) VALUES (`+placeholders(19)+`) ON CONFLICT (id) DO NOTHING`)
	if err != nil {
		return wrap("append audit", err)
	}
	defer insert.Close()
	tails := map[string]chainLink{}
	for _, e := range entries {
		tail, known := tails[e.AccountID]
		if !known {
			err := tx.QueryRowContext(ctx, `SELECT seq, hash FROM audit_log WHERE account_id = ? AND seq > 0 ORDER BY seq DESC LIMIT 1`,
				e.AccountID).Scan(&tail.seq, &tail.hash)
			if err != nil && !errors.Is(err, sql.ErrNoRows) {
				return wrap("append audit: chain end", err)
			}
		}
		e.Seq, e.PrevHash = tail.seq+1, tail.hash
		e.CreatedAt = storage.Truncate(e.CreatedAt)
		e.Hash = storage.AuditHash(e)
		res, err := insert.ExecContext(ctx, e.ID, e.AccountID, e.AppID, e.ActorType, e.ActorID, e.ActorName, e.IP, e.Method,
			e.Route, e.Path, e.RecordType, e.RecordID, e.Status, e.Before, e.After, toMillis(e.CreatedAt), e.Seq, e.PrevHash,
			e.Hash)
		if err != nil {
			return wrap("append audit", err)
		}
		tails[e.AccountID] = tail
		if n, err := res.RowsAffected(); err != nil {
			return wrap("append audit", err)
		} else if n == 1 {
			tails[e.AccountID] = chainLink{e.Seq, e.Hash}
		}
	}
	return nil
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
	// Entries of one millisecond come in their chain's order (seq), newest first: a random
	// id must not decide which of two quick changes reads as the newer.
	return listPage(ctx, s, "list audit", "audit_log", auditCols, w, "created_at DESC, seq DESC, id DESC", q.Page, scanAudit)
}

// DeleteAuditBefore implements storage.AuditStore: per account, an old entry goes only when
// it comes before the first kept chained entry (else before the last one, which stays).
// Entries outside the chain (seq 0) go by age alone.
func (s *Store) DeleteAuditBefore(ctx context.Context, t time.Time) (int, error) {
	n, err := execCount(ctx, s.w, `DELETE FROM audit_log WHERE created_at < ?1 AND (seq = 0 OR seq < coalesce(
	(SELECT min(k.seq) FROM audit_log k WHERE k.account_id = audit_log.account_id AND k.seq > 0 AND k.created_at >= ?1),
	(SELECT max(k.seq) FROM audit_log k WHERE k.account_id = audit_log.account_id)))`, t.UnixMilli())
	if err != nil {
		return 0, wrap("delete audit before", err)
	}
	return n, nil
}

// AuditAccounts implements storage.AuditStore.
func (s *Store) AuditAccounts(ctx context.Context) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT DISTINCT account_id FROM audit_log WHERE seq > 0 ORDER BY account_id`)
	if err != nil {
		return nil, wrap("audit accounts", err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, wrap("audit accounts", err)
		}
		out = append(out, id)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("audit accounts", err)
	}
	return out, nil
}

// AuditChain implements storage.AuditStore.
func (s *Store) AuditChain(ctx context.Context, accountID string, afterSeq int64, limit int) ([]storage.AuditEntry, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+auditCols+` FROM audit_log WHERE account_id = ? AND seq > ? ORDER BY seq LIMIT ?`,
		accountID, max(afterSeq, 0), limit)
	if err != nil {
		return nil, wrap("audit chain", err)
	}
	defer rows.Close()
	var out []storage.AuditEntry
	for rows.Next() {
		e, err := scanAudit(rows)
		if err != nil {
			return nil, wrap("audit chain", err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap("audit chain", err)
	}
	return out, nil
}
