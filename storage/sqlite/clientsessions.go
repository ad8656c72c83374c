package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/keyward/keyward/storage"
)

var _ storage.ClientSessionStore = (*Store)(nil)

// clientSessionCols is the column order of scanClientSession and of the upsert's values.
const clientSessionCols = `token_hash, app_id, account_id, user_id, username, hwid, ip, country, version,
	created_at, login_at, expires_at`

// saveClientSession inserts a session or, when its token hash is stored, replaces every
// other column: the last write wins.
const saveClientSession = clientSessionInsert + clientSessionValues + clientSessionUpsert

const (
	clientSessionInsert = `INSERT INTO client_sessions (` + clientSessionCols + `)
VALUES `
	clientSessionValues = `(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`
	clientSessionUpsert = `
ON CONFLICT (token_hash) DO UPDATE SET
	app_id = excluded.app_id, account_id = excluded.account_id, user_id = excluded.user_id,
	username = excluded.username, hwid = excluded.hwid, ip = excluded.ip, country = excluded.country,
	version = excluded.version, created_at = excluded.created_at, login_at = excluded.login_at,
	expires_at = excluded.expires_at`
)

// sessionChunk is how many sessions one statement of SaveClientRound upserts
// (saveClientSessionChunk; 12 parameters each: 192, well under SQLite's limit).
const (
	sessionChunk           = 16
	clientSessionValues4   = clientSessionValues + ", " + clientSessionValues + ", " + clientSessionValues + ", " + clientSessionValues
	clientSessionValues16  = clientSessionValues4 + ", " + clientSessionValues4 + ", " + clientSessionValues4 + ", " + clientSessionValues4
	saveClientSessionChunk = clientSessionInsert + clientSessionValues16 + clientSessionUpsert
)

func scanClientSession(row scanner) (storage.ClientSession, error) {
	var c storage.ClientSession
	err := row.Scan(&c.TokenHash, &c.AppID, &c.AccountID, &c.UserID, &c.Username, &c.HWID, &c.IP, &c.Country,
		&c.Version, timeCol{&c.CreatedAt}, timeCol{&c.LoginAt}, timeCol{&c.ExpiresAt})
	return c, err
}

// SaveClientSessions upserts every session (an ExtendOnly one only moves a stored
// copy's expiry later) in one transaction: all of them or none. There is no parent check (see the
// table's comment).
func (s *Store) SaveClientSessions(ctx context.Context, ss []storage.ClientSession) error {
	const op = "save client sessions"
	if len(ss) == 0 {
		return nil
	}
	return s.inWriteTx(ctx, op, func(tx *sql.Tx) error { return s.saveClientSessionsTx(ctx, tx, op, ss) })
}

func clientSessionRow(c storage.ClientSession) []any {
	return []any{c.TokenHash, c.AppID, c.AccountID, c.UserID, c.Username, c.HWID, c.IP, c.Country, c.Version,
		toMillis(c.CreatedAt), toMillis(c.LoginAt), toMillis(c.ExpiresAt)}
}

// extendClientSession moves a stored copy's expiry later, and creates none
// (ExtendOnly); its arguments are the token hash and the expiry.
const extendClientSession = `UPDATE client_sessions SET expires_at = max(expires_at, ?2) WHERE token_hash = ?1`

// extendChunk is how many copies one statement of extendClientSessionChunk extends.
const extendChunk = 32

// extendClientSessionChunk is extendClientSession for extendChunk copies in one statement
// (UPDATE … FROM a VALUES list, whose columns SQLite names column1 and column2); a row
// whose copy is not stored matches nothing.
var extendClientSessionChunk = `UPDATE client_sessions SET expires_at = max(client_sessions.expires_at, v.column2)
FROM (VALUES ` + strings.Repeat("(?, ?), ", extendChunk-1) + `(?, ?)) AS v
WHERE client_sessions.token_hash = v.column1`

// SaveClientRound upserts the sessions and records the logins in one write transaction,
// with the events of the context's outbox (a round's sign-ins: events.Bus.WritePendingWith):
// a login's session, last login and events are stored together or not at all.
func (s *Store) SaveClientRound(ctx context.Context, ss []storage.ClientSession, logins []storage.UserLogin) error {
	const op = "save client round"
	if len(ss) == 0 && len(logins) == 0 {
		return nil
	}
	return s.inWriteTx(ctx, op, func(tx *sql.Tx) error {
		if err := s.saveClientSessionsTx(ctx, tx, op, ss); err != nil {
			return err
		}
		return s.recordLoginsTx(ctx, tx, op, logins)
	})
}

// saveClientSessionsTx upserts the sessions in tx, and moves the expiry of the
// ExtendOnly ones that are stored later. Full chunks of upserts go as one multi-row statement each (a round of
// concurrent inits is tens of sessions, and one statement costs the driver's
// per-statement work once rather than per row); the rest row by row. A token hash given
// twice is one save (storage.CoalesceClientSessions), as in the MongoDB engine; the
// archive's rounds name each once.
func (s *Store) saveClientSessionsTx(ctx context.Context, tx *sql.Tx, op string, all []storage.ClientSession) error {
	all = storage.CoalesceClientSessions(all)
	ss := make([]storage.ClientSession, 0, len(all))
	var extends []storage.ClientSession
	for _, c := range all {
		if c.ExtendOnly {
			extends = append(extends, c)
		} else {
			ss = append(ss, c)
		}
	}
	err := execChunked(ctx, s, tx, chunkedStmt[storage.ClientSession]{chunkSQL: saveClientSessionChunk, rowSQL: saveClientSession,
		chunk: sessionChunk, args: clientSessionRow, what: op + ": sessions"}, ss)
	if err != nil {
		return err
	}
	// The ExtendOnly ones only move a stored copy's expiry later: a round of heartbeats is
	// mostly extends (BenchmarkExtendClientRound).
	return execChunked(ctx, s, tx, chunkedStmt[storage.ClientSession]{chunkSQL: extendClientSessionChunk, rowSQL: extendClientSession,
		chunk: extendChunk, args: func(c storage.ClientSession) []any { return []any{c.TokenHash, toMillis(c.ExpiresAt)} },
		what: op + ": extended sessions"}, extends)
}

// chunkedStmt is a statement written for a chunk of rows at once (chunkSQL, whose
// arguments are args of each row in turn) and for one row (rowSQL).
type chunkedStmt[T any] struct {
	chunkSQL, rowSQL string
	chunk            int
	args             func(T) []any
	what             string // the error's context
}

// execChunked runs st for rows in tx: full chunks as one statement each, the rest row by
// row (one statement costs the driver's per-statement work once rather than per row).
func execChunked[T any](ctx context.Context, s *Store, tx *sql.Tx, st chunkedStmt[T], rows []T) error {
	i := 0
	if len(rows) >= st.chunk {
		chunk := s.txStmt(ctx, tx, st.chunkSQL)
		var args []any
		for ; i+st.chunk <= len(rows); i += st.chunk {
			args = args[:0]
			for _, r := range rows[i : i+st.chunk] {
				args = append(args, st.args(r)...)
			}
			if _, err := chunk.ExecContext(ctx, args...); err != nil {
				return wrap(fmt.Sprintf("%s %d-%d", st.what, i, i+st.chunk-1), err)
			}
		}
	}
	if i < len(rows) {
		row := s.txStmt(ctx, tx, st.rowSQL)
		for ; i < len(rows); i++ {
			if _, err := row.ExecContext(ctx, st.args(rows[i])...); err != nil {
				return wrap(fmt.Sprintf("%s %d", st.what, i), err)
			}
		}
	}
	return nil
}

// GetClientSession reads one session by token hash, expired or not.
func (s *Store) GetClientSession(ctx context.Context, tokenHash string) (storage.ClientSession, error) {
	c, err := scanClientSession(s.r.QueryRowContext(ctx, `SELECT `+clientSessionCols+` FROM client_sessions WHERE token_hash = ?`, tokenHash))
	if err != nil {
		return storage.ClientSession{}, wrap("get client session", err)
	}
	return c, nil
}

// DeleteClientSessions removes the sessions with these token hashes in one transaction,
// by chunks of deleteChunk, with the events of the context's outbox (a session's end).
func (s *Store) DeleteClientSessions(ctx context.Context, tokenHashes []string) error {
	const op = "delete client sessions"
	if len(tokenHashes) == 0 {
		return nil
	}
	return s.inWriteTx(ctx, op, func(tx *sql.Tx) error {
		for chunk := range slices.Chunk(tokenHashes, deleteChunk) {
			args := make([]any, len(chunk))
			for i, h := range chunk {
				args[i] = h
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM client_sessions WHERE token_hash IN (`+placeholders(len(chunk))+`)`, args...); err != nil {
				return wrap(op, err)
			}
		}
		return nil
	})
}

// DeleteUserClientSessions removes every session of the app's user, with the events of the
// context's outbox. Sessions before login have no user: an empty userID removes nothing.
func (s *Store) DeleteUserClientSessions(ctx context.Context, appID, userID string) (int, error) {
	if userID == "" {
		return 0, nil
	}
	const op = "delete user client sessions"
	var n int
	// A transaction, so that the events of the context's outbox (a kill's
	// user.session_kill) are stored with the delete.
	err := s.inWriteTx(ctx, op, func(tx *sql.Tx) error {
		var err error
		n, err = execCount(ctx, tx, `DELETE FROM client_sessions WHERE app_id = ? AND user_id = ?`, appID, userID)
		if err != nil {
			return wrap(op, err)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// DeleteExpiredClientSessions removes the sessions expiring at or before now. A zero
// ExpiresAt is stored as 0, so such a session counts as expired for any now after 1970.
func (s *Store) DeleteExpiredClientSessions(ctx context.Context, now time.Time) (int, error) {
	n, err := execCount(ctx, s.w, `DELETE FROM client_sessions WHERE expires_at <= ?`, toMillis(now))
	if err != nil {
		return 0, wrap("delete expired client sessions", err)
	}
	return n, nil
}
