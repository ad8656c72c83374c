package sqlite

import (
	"cmp"
	"context"
	"database/sql"

	"github.com/keyward/keyward/storage"
)

var _ storage.LogPurgeStore = (*Store)(nil)

// logPurgeCols is the column order of scanLogPurge.
const logPurgeCols = `id, app_id, days, before_at, account_id, actor, request_id, created_at, touched_at`

func scanLogPurge(row scanner) (storage.LogPurge, error) {
	var p storage.LogPurge
	err := row.Scan(&p.ID, &p.AppID, &p.Days, timeCol{&p.Before}, &p.AccountID, &p.Actor, &p.RequestID,
		timeCol{&p.CreatedAt}, timeCol{&p.TouchedAt})
	return p, err
}

// BeginLogPurge implements storage.LogPurgeStore: the intent's insert is the change's
// transaction, so the audit entry the context carries (audit.Own) is appended in it.
func (s *Store) BeginLogPurge(ctx context.Context, p storage.LogPurge) error {
	return s.insertAll(ctx, "begin log purge", `INSERT INTO log_purges (`+logPurgeCols+`) VALUES (`+placeholders(9)+`)`,
		[][]any{{p.ID, p.AppID, p.Days, toMillis(p.Before), p.AccountID, p.Actor, p.RequestID, toMillis(p.CreatedAt), toMillis(p.TouchedAt)}})
}

// RunLogPurge implements storage.LogPurgeStore: each chunk of at most logDeleteChunk
// entries goes in a transaction of its own that also touches the intent; the intent goes
// in the transaction of the last chunk, the one that found fewer than a chunk to delete.
// The event and audit outboxes are not the chunks' (the entry went with the intent).
func (s *Store) RunLogPurge(ctx context.Context, p storage.LogPurge) (int, error) {
	const op = "run log purge"
	ctx = storage.WithoutEventOutbox(ctx)
	chunk := cmp.Or(s.purgeChunk, logDeleteChunk)
	total := 0
	for {
		n := 0
		err := s.inWriteTx(ctx, op, func(tx *sql.Tx) error {
			var err error
			n, err = execCount(ctx, tx, `DELETE FROM logs WHERE rowid IN (SELECT rowid FROM logs WHERE app_id = ? AND created_at < ? LIMIT ?)`,
				p.AppID, p.Before.UnixMilli(), chunk)
			if err != nil {
				return wrap(op, err)
			}
			if n < chunk {
				_, err = tx.ExecContext(ctx, `DELETE FROM log_purges WHERE id = ?`, p.ID)
			} else {
				_, err = tx.ExecContext(ctx, `UPDATE log_purges SET touched_at = ? WHERE id = ?`, toMillis(storage.Now()), p.ID)
			}
			return wrapIf(op, err)
		})
		if err != nil {
			return total, err
		}
		total += n
		if n < chunk {
			return total, nil
		}
	}
}

// LogPurges implements storage.LogPurgeStore.
func (s *Store) LogPurges(ctx context.Context) ([]storage.LogPurge, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+logPurgeCols+` FROM log_purges ORDER BY created_at, id`)
	if err != nil {
		return nil, wrap("log purges", err)
	}
	out, err := scanAll(rows, scanLogPurge)
	if err != nil {
		return nil, wrap("log purges", err)
	}
	return out, nil
}
