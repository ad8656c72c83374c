package sqlite

import (
	"context"
	"database/sql"

	"github.com/keyward/keyward/storage"
)

var _ storage.WSHookStore = (*Store)(nil)

// wsHookCols is the column order of scanWSHook.
const wsHookCols = `id, app_id, name, event, description, conditions, actions, enabled, priority,
	created_at, updated_at`

// wsHookSet assigns every mutable column, in the order of wsHookSetArgs.
const wsHookSet = `name = ?, event = ?, description = ?, conditions = ?, actions = ?, enabled = ?,
	priority = ?, updated_at = ?`

func wsHookSetArgs(h storage.WSHook) []any {
	return []any{h.Name, h.Event, h.Description, payloadArg(h.Conditions), payloadArg(h.Actions), h.Enabled,
		h.Priority, toMillis(h.UpdatedAt)}
}

func scanWSHook(row scanner) (storage.WSHook, error) {
	var h storage.WSHook
	err := row.Scan(&h.ID, &h.AppID, &h.Name, &h.Event, &h.Description, &h.Conditions, &h.Actions, &h.Enabled,
		&h.Priority, timeCol{&h.CreatedAt}, timeCol{&h.UpdatedAt})
	// No bytes read back as nil, whether they were written as nil or empty (see WSHook).
	h.Conditions, h.Actions = noBytesAsNil(h.Conditions), noBytesAsNil(h.Actions)
	return h, err
}

// noBytesAsNil answers nil for an empty byte slice.
func noBytesAsNil(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

// CreateWSHook inserts h; the foreign key answers ErrNotFound when the app does not exist,
// the primary key ErrConflict on a taken id.
func (s *Store) CreateWSHook(ctx context.Context, h storage.WSHook) error {
	return s.insertAll(ctx, "create ws hook", `INSERT INTO ws_hooks (id, app_id, created_at,
	name, event, description, conditions, actions, enabled, priority, updated_at)
VALUES (`+placeholders(11)+`)`, [][]any{append([]any{h.ID, h.AppID, toMillis(h.CreatedAt)}, wsHookSetArgs(h)...)})
}

// GetWSHook reads the app's hook by id.
func (s *Store) GetWSHook(ctx context.Context, appID, id string) (storage.WSHook, error) {
	h, err := scanWSHook(s.r.QueryRowContext(ctx, `SELECT `+wsHookCols+` FROM ws_hooks WHERE app_id = ? AND id = ?`, appID, id))
	if err != nil {
		return storage.WSHook{}, wrap("get ws hook", err)
	}
	return h, nil
}

// ListWSHooks answers every hook of the app by priority, then creation time, then id
// (the ws_hooks_priority index).
func (s *Store) ListWSHooks(ctx context.Context, appID string) ([]storage.WSHook, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+wsHookCols+` FROM ws_hooks WHERE app_id = ?
ORDER BY priority, created_at, id`, appID)
	if err != nil {
		return nil, wrap("list ws hooks", err)
	}
	out, err := scanAll(rows, scanWSHook)
	if err != nil {
		return nil, wrap("list ws hooks", err)
	}
	return out, nil
}

// CountWSHooks counts the app's hooks.
func (s *Store) CountWSHooks(ctx context.Context, appID string) (int, error) {
	return s.countWhere(ctx, "count ws hooks", "ws_hooks", "app_id = ?", appID)
}

// UpdateWSHook applies fn to the app's hook in one write transaction (see updateRecord).
// The id, the app and the creation time are kept.
func (s *Store) UpdateWSHook(ctx context.Context, appID, id string, fn func(*storage.WSHook) error) (storage.WSHook, error) {
	return updateRecord(ctx, s, "update ws hook",
		func(tx *sql.Tx) (storage.WSHook, error) {
			return scanWSHook(tx.QueryRowContext(ctx, `SELECT `+wsHookCols+` FROM ws_hooks WHERE app_id = ? AND id = ?`, appID, id))
		},
		fn,
		func(cur storage.WSHook, next *storage.WSHook) {
			next.ID, next.AppID, next.CreatedAt = cur.ID, cur.AppID, cur.CreatedAt
			next.UpdatedAt = storage.Truncate(next.UpdatedAt)
			// As they read back.
			next.Conditions, next.Actions = noBytesAsNil(next.Conditions), noBytesAsNil(next.Actions)
		},
		func(tx *sql.Tx, next storage.WSHook) error {
			_, err := tx.ExecContext(ctx, `UPDATE ws_hooks SET `+wsHookSet+` WHERE id = ?`, append(wsHookSetArgs(next), next.ID)...)
			return err
		})
}

// DeleteWSHook removes the app's hook.
func (s *Store) DeleteWSHook(ctx context.Context, appID, id string) error {
	return s.deleteOne(ctx, "delete ws hook", `DELETE FROM ws_hooks WHERE app_id = ? AND id = ?`, appID, id)
}
