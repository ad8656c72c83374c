package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"

	"github.com/keyward/keyward/storage"
)

// timeCol scans a time column (unix milliseconds, 0 for the zero time) into *t, so that
// scan functions list every column once instead of scanning into temporaries.
type timeCol struct{ t *time.Time }

func (c timeCol) Scan(v any) error {
	n, ok := v.(int64)
	if !ok {
		return fmt.Errorf("time column holds %T, want INTEGER", v)
	}
	*c.t = fromMillis(n)
	return nil
}

// inWriteTx runs f in one IMMEDIATE transaction on the writer and commits when f succeeds.
// f's own errors are returned as they are (callers wrap them, or pass an updater's error
// through untouched); begin and commit errors are wrapped with op.
func (s *Store) inWriteTx(ctx context.Context, op string, f func(tx *sql.Tx) error) error {
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return wrap(op, err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit this is a no-op
	if err := f(tx); err != nil {
		return err
	}
	// The change's events (storage.EventOutbox), taken after its statements so that an
	// updater that adds them is seen, are written in its transaction.
	ob := storage.EventOutboxFrom(ctx)
	var recs []storage.EventRecord
	var ao storage.AuditOutbox
	if ob != nil {
		if recs = ob.Take(); len(recs) > 0 {
			if err := s.appendEventsTx(ctx, tx, recs); err != nil {
				return wrap(op+": events", err)
			}
		}
		// The change's audit entry (storage.AuditOutbox, the edge's draft) goes in the
		// same transaction: only in the change's own store call, which carries the
		// event outbox.
		if ao = storage.AuditOutboxFrom(ctx); ao != nil {
			if e, ok := ao.TakeAudit(); ok {
				if parts, isPart := ao.(storage.AuditParts); isPart {
					// One record's part of a bulk request's entry: kept with the change,
					// merged into the chain when the request ends (auditparts.go).
					if err := insertAuditPart(ctx, tx, parts.AuditGroup(), e); err != nil {
						return wrap(op+": audit part", err)
					}
				} else if err := s.appendAuditTx(ctx, tx, []storage.AuditEntry{e}); err != nil {
					return wrap(op+": audit", err)
				}
			} else {
				ao = nil
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return wrap(op, err)
	}
	if len(recs) > 0 {
		ob.Stored(recs)
	}
	if ao != nil {
		ao.AuditStored()
	}
	return nil
}

// inReadTx runs f in one read-only transaction on the reader pool, so that the several
// queries of a list (page and total) or of the stats see one snapshot.
func (s *Store) inReadTx(ctx context.Context, op string, f func(tx *sql.Tx) error) error {
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return wrap(op, err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only
	return f(tx)
}

// updateRecord is the read-modify-write every Update method shares: read the record, apply
// fn, restore what fn may not change (keep), write. It all runs in one IMMEDIATE
// transaction on the single writer connection, so no other writer — in this process or
// another — interleaves, and fn sees the latest committed record. fn's error aborts the
// transaction and is returned unwrapped, so callers match it with errors.Is/As.
func updateRecord[T any](ctx context.Context, s *Store, op string,
	read func(tx *sql.Tx) (T, error), fn func(*T) error, keep func(cur T, next *T), write func(tx *sql.Tx, next T) error,
) (T, error) {
	var out T
	err := s.inWriteTx(ctx, op, func(tx *sql.Tx) error {
		cur, err := read(tx)
		if err != nil {
			return wrap(op, err)
		}
		next := cur
		if err := fn(&next); err != nil {
			return err
		}
		keep(cur, &next)
		if err := write(tx, next); err != nil {
			return wrap(op, err)
		}
		out = next
		return nil
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return out, nil
}

// insertAll inserts rows with one prepared statement in one transaction: all of them or,
// at the first error, none. A foreign key violation means the parent record (the app, or
// the user of a device) does not exist, and answers ErrNotFound.
func (s *Store) insertAll(ctx context.Context, op, query string, rows [][]any) error {
	return s.insertChecked(ctx, op, query, rows, nil)
}

// insertChecked is insertAll with check run first in the same write transaction: a parent
// that no foreign key can express (the owner of a variable) is checked there, and no
// other writer can remove it before the rows are in. check's error is returned as it is.
func (s *Store) insertChecked(ctx context.Context, op, query string, rows [][]any, check func(tx *sql.Tx) error) error {
	if len(rows) == 0 {
		return nil
	}
	return s.inWriteTx(ctx, op, func(tx *sql.Tx) error {
		if check != nil {
			if err := check(tx); err != nil {
				return err
			}
		}
		stmt := s.txStmt(ctx, tx, query) // prepared once per connection (stmtcache.go)
		for i, args := range rows {
			if _, err := stmt.ExecContext(ctx, args...); err != nil {
				if isForeignKey(err) {
					return wrap(fmt.Sprintf("%s: record %d: parent record", op, i), sql.ErrNoRows)
				}
				return wrap(fmt.Sprintf("%s: record %d", op, i), err)
			}
		}
		return nil
	})
}

// execCount runs a write statement and answers how many rows it changed.
func execCount(ctx context.Context, ex interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, query string, args ...any) (int, error) {
	res, err := ex.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// deleteOne runs a DELETE meant to remove one row, answering ErrNotFound when none matched.
func (s *Store) deleteOne(ctx context.Context, op, query string, args ...any) error {
	if storage.EventOutboxFrom(ctx) != nil {
		// The change's events go in its transaction.
		return s.inWriteTx(ctx, op, func(tx *sql.Tx) error {
			n, err := execCount(ctx, tx, query, args...)
			if err != nil {
				return wrap(op, err)
			}
			if n == 0 {
				return wrap(op, sql.ErrNoRows)
			}
			return nil
		})
	}
	n, err := execCount(ctx, s.w, query, args...)
	if err != nil {
		return wrap(op, err)
	}
	if n == 0 {
		return wrap(op, sql.ErrNoRows)
	}
	return nil
}

// where collects the conditions and arguments of a list query.
type where struct {
	conds []string
	args  []any
}

func (w *where) add(cond string, args ...any) {
	w.conds = append(w.conds, cond)
	w.args = append(w.args, args...)
}

// search adds a case-insensitive literal substring match on any of the lower-cased columns.
// instr rather than LIKE: '%' and '_' in the search must not act as wildcards, and LIKE
// only folds ASCII case; the columns hold strings.ToLower copies made in Go.
func (w *where) search(s string, lowerCols ...string) {
	if s == "" {
		return
	}
	s = strings.ToLower(s)
	ors := make([]string, len(lowerCols))
	for i, c := range lowerCols {
		ors[i] = "instr(" + c + ", ?) > 0"
		w.args = append(w.args, s)
	}
	w.conds = append(w.conds, "("+strings.Join(ors, " OR ")+")")
}

func (w *where) sql() string { return strings.Join(w.conds, " AND ") }

// orderBy is the ORDER BY of a list sorted on col: id breaks ties so that pages are
// stable, and desc reverses the whole order.
func orderBy(col string, desc bool) string {
	if desc {
		return col + " DESC, id DESC"
	}
	return col + ", id"
}

// listPage counts the rows matching w and reads one page of them, in one snapshot.
func listPage[T any](ctx context.Context, s *Store, op, table, cols string, w where, order string, p storage.Page,
	scan func(scanner) (T, error),
) ([]T, int, error) {
	p = p.Normalize()
	var (
		out   []T
		total int
	)
	err := s.inReadTx(ctx, op, func(tx *sql.Tx) error {
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM `+table+` WHERE `+w.sql(), w.args...).Scan(&total); err != nil {
			return wrap(op+": count", err)
		}
		rows, err := tx.QueryContext(ctx, `SELECT `+cols+` FROM `+table+` WHERE `+w.sql()+
			` ORDER BY `+order+` LIMIT ? OFFSET ?`, append(w.args, p.Limit, p.Offset)...)
		if err != nil {
			return wrap(op, err)
		}
		out, err = scanAll(rows, scan)
		if err != nil {
			return wrap(op, err)
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	return out, total, nil
}

func scanAll[T any](rows *sql.Rows, scan func(scanner) (T, error)) ([]T, error) {
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, rows.Err()
}

// countWhere answers count(*) of table under a fixed condition.
func (s *Store) countWhere(ctx context.Context, op, table, cond string, args ...any) (int, error) {
	var n int
	if err := s.r.QueryRowContext(ctx, `SELECT count(*) FROM `+table+` WHERE `+cond, args...).Scan(&n); err != nil {
		return 0, wrap(op, err)
	}
	return n, nil
}

// placeholders answers "?, ?, …" for n arguments.
func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?, ", n), ", ")
}
