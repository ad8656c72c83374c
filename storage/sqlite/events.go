package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"time"

	"github.com/keyward/keyward/storage"
)

var _ storage.EventLogStore = (*Store)(nil)

// AppendEvents stores the batch in one IMMEDIATE transaction on the single writer: the
// app's last seq is read and the rows inserted with no other writer in between, in this
// process or another, so seq and pos are given once and in the same order.
func (s *Store) AppendEvents(ctx context.Context, evs []storage.EventRecord) error {
	const op = "append events"
	if len(evs) == 0 {
		return nil
	}
	out := make([]storage.EventRecord, len(evs))
	copy(out, evs)
	// The batch is its own write: no change's outbox rides it.
	err := s.inWriteTx(storage.WithoutEventOutbox(ctx), op, func(tx *sql.Tx) error {
		return s.appendEventsTx(ctx, tx, out)
	})
	if err != nil {
		return err
	}
	copy(evs, out)
	return nil
}

// Statements of appendEventsTx.
const (
	lastEventSeq = `SELECT coalesce(max(seq), 0) FROM events WHERE app_id = ?`
	insertEvent  = `INSERT INTO events (id, app_id, seq, type, payload, created_at) VALUES (?, ?, ?, ?, ?, ?)`
)

// eventChunk is how many events one statement of appendEventsTx inserts (6 parameters
// each): a group-commit round of concurrent inits carries tens of events, and one
// statement costs the driver's per-statement work once rather than per row.
const eventChunk = 16

const (
	insertEventValues  = `(?, ?, ?, ?, ?, ?)`
	insertEventValues4 = insertEventValues + ", " + insertEventValues + ", " + insertEventValues + ", " + insertEventValues
	// insertEventChunk inserts eventChunk events and answers each one's position by id
	// (RETURNING's row order is not defined; id is unique).
	insertEventChunk = `INSERT INTO events (id, app_id, seq, type, payload, created_at) VALUES ` +
		insertEventValues4 + ", " + insertEventValues4 + ", " + insertEventValues4 + ", " + insertEventValues4 +
		` RETURNING id, pos`
)

// appendEventsTx inserts evs in tx, in order, setting each one's Pos and Seq: the append
// of AppendEvents and of a change's outbox (inWriteTx).
func (s *Store) appendEventsTx(ctx context.Context, tx *sql.Tx, evs []storage.EventRecord) error {
	const op = "append events"
	// Each app's next seqs, in the batch's order (the writer is alone in tx).
	lastSeq := s.txStmt(ctx, tx, lastEventSeq)
	last := make(map[string]int64, 4)
	for i := range evs {
		e := &evs[i]
		seq, ok := last[e.AppID]
		if !ok {
			if err := lastSeq.QueryRowContext(ctx, e.AppID).Scan(&seq); err != nil {
				return wrap(op, err)
			}
		}
		seq++
		last[e.AppID] = seq
		e.Seq = seq
	}
	i := 0
	if len(evs) >= eventChunk {
		chunk := s.txStmt(ctx, tx, insertEventChunk)
		args := make([]any, 0, eventChunk*6)
		pos := make(map[string]int64, eventChunk)
		for ; i+eventChunk <= len(evs); i += eventChunk {
			part := evs[i : i+eventChunk]
			args = args[:0]
			for _, e := range part {
				args = append(args, e.ID, e.AppID, e.Seq, e.Type, eventPayload(e.Payload), toMillis(e.At))
			}
			clear(pos)
			if err := insertReturningPos(ctx, chunk, args, pos); err != nil {
				return wrap(op, err)
			}
			for j := range part {
				p, ok := pos[part[j].ID]
				if !ok {
					return wrap(op, fmt.Errorf("event %s: no position returned", part[j].ID))
				}
				part[j].Pos = p
			}
		}
	}
	if i < len(evs) {
		ins := s.txStmt(ctx, tx, insertEvent)
		for ; i < len(evs); i++ {
			e := &evs[i]
			res, err := ins.ExecContext(ctx, e.ID, e.AppID, e.Seq, e.Type, eventPayload(e.Payload), toMillis(e.At))
			if err != nil {
				return wrap(op, err)
			}
			pos, err := res.LastInsertId()
			if err != nil {
				return wrap(op, err)
			}
			e.Pos = pos
		}
	}
	return nil
}

// eventPayload is the stored payload: an empty one for none (the column is NOT NULL).
func eventPayload(p []byte) []byte {
	if p == nil {
		return []byte{}
	}
	return p
}

// insertReturningPos runs a chunk's insert and puts each returned id's position in pos.
func insertReturningPos(ctx context.Context, stmt txQuery, args []any, pos map[string]int64) error {
	rows, err := stmt.tx.QueryContext(ctx, stmt.query, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		var p int64
		if err := rows.Scan(&id, &p); err != nil {
			return err
		}
		pos[id] = p
	}
	return rows.Err()
}

// ReadEvents answers up to n events after the position, in order.
func (s *Store) ReadEvents(ctx context.Context, after int64, n int) ([]storage.EventRecord, error) {
	const op = "read events"
	if n <= 0 {
		return nil, nil
	}
	rows, err := s.r.QueryContext(ctx, `SELECT pos, id, app_id, seq, type, payload, created_at FROM events
	WHERE pos > ? ORDER BY pos LIMIT ?`, after, n)
	if err != nil {
		return nil, wrap(op, err)
	}
	defer rows.Close()
	var out []storage.EventRecord
	for rows.Next() {
		var e storage.EventRecord
		if err := rows.Scan(&e.Pos, &e.ID, &e.AppID, &e.Seq, &e.Type, &e.Payload, timeCol{&e.At}); err != nil {
			return nil, wrap(op, err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap(op, err)
	}
	return out, nil
}

// LastEventPos answers the newest position, 0 for an empty log.
func (s *Store) LastEventPos(ctx context.Context) (int64, error) {
	var pos int64
	if err := s.r.QueryRowContext(ctx, `SELECT coalesce(max(pos), 0) FROM events`).Scan(&pos); err != nil {
		return 0, wrap("last event pos", err)
	}
	return pos, nil
}

// EventCursor answers the consumer's stored cursor, 0 when none.
func (s *Store) EventCursor(ctx context.Context, consumer string) (int64, error) {
	var pos int64
	err := s.r.QueryRowContext(ctx, `SELECT pos FROM event_cursors WHERE consumer = ?`, consumer).Scan(&pos)
	if err == sql.ErrNoRows {
		return 0, nil
	}
	if err != nil {
		return 0, wrap("event cursor", err)
	}
	return pos, nil
}

// SetEventCursor moves the consumer's cursor forward (never back).
func (s *Store) SetEventCursor(ctx context.Context, consumer string, pos int64) error {
	_, err := s.w.ExecContext(ctx, `INSERT INTO event_cursors (consumer, pos, updated_at) VALUES (?, ?, ?)
	ON CONFLICT (consumer) DO UPDATE SET pos = max(pos, excluded.pos), updated_at = excluded.updated_at`,
		consumer, pos, time.Now().UnixMilli())
	if err != nil {
		return wrap("set event cursor", err)
	}
	return nil
}

// CompactEvents removes consumed old events, oldest first, keeping each app's newest.
func (s *Store) CompactEvents(ctx context.Context, through int64, before time.Time, limit int) (int, error) {
	if limit <= 0 || through <= 0 {
		return 0, nil
	}
	res, err := s.w.ExecContext(ctx, `DELETE FROM events WHERE pos IN (
	SELECT e.pos FROM events e WHERE e.pos <= ? AND e.created_at < ?
	AND e.seq < (SELECT max(x.seq) FROM events x WHERE x.app_id = e.app_id)
	ORDER BY e.pos LIMIT ?)`, through, toMillis(before), limit)
	if err != nil {
		return 0, wrap("compact events", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, wrap("compact events", err)
	}
	return int(n), nil
}
