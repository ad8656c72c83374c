package sqlite

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/keyward/keyward/storage"
)

var (
	_ storage.VariableStore = (*Store)(nil)
	_ storage.FileStore     = (*Store)(nil)
	_ storage.RuleStore     = (*Store)(nil)
)

// variableCols is the column order of scanVariable.
const variableCols = `id, app_id, scope, owner_id, key, value, type, created_at, updated_at`

func scanVariable(row scanner) (storage.Variable, error) {
	var v storage.Variable
	err := row.Scan(&v.ID, &v.AppID, &v.Scope, &v.OwnerID, &v.Key, &v.Value, &v.Type,
		timeCol{&v.CreatedAt}, timeCol{&v.UpdatedAt})
	return v, err
}

// ownerTables maps a variable scope onto the table of its owners ("" for the app itself).
var ownerTables = map[string]string{
	storage.ScopeApp:     "",
	storage.ScopeUser:    "app_users",
	storage.ScopeLicense: "licenses",
}

// checkScope refuses a scope the contract does not know, and an app variable with an owner.
func checkScope(scope, ownerID string) error {
	if _, ok := ownerTables[scope]; !ok {
		return fmt.Errorf("unknown variable scope %q", scope)
	}
	if scope == storage.ScopeApp && ownerID != "" {
		return fmt.Errorf("app variable with owner %q", ownerID)
	}
	return nil
}

// variableOwner names the record a variable belongs to.
type variableOwner struct{ appID, scope, ownerID string }

// checkOwner answers ErrNotFound (wrapped) unless the app, and for a user or license
// variable the app's user or license, exists.
func checkOwner(ctx context.Context, tx *sql.Tx, op string, o variableOwner) error {
	query, args, what := `SELECT 1 FROM apps WHERE id = ?`, []any{o.appID}, "app "+o.appID
	if table := ownerTables[o.scope]; table != "" {
		query, args = `SELECT 1 FROM `+table+` WHERE app_id = ? AND id = ?`, []any{o.appID, o.ownerID}
		what = o.scope + " " + o.ownerID
	}
	var one int
	if err := tx.QueryRowContext(ctx, query, args...).Scan(&one); err != nil {
		return wrap(op+": "+what, err)
	}
	return nil
}

// CreateVariables inserts every variable in one transaction, after checking each distinct
// owner in it: an unknown app, user or license answers ErrNotFound, a key taken in its
// scope and owner (or twice in the batch) ErrConflict, and either leaves none inserted.
func (s *Store) CreateVariables(ctx context.Context, vs []storage.Variable) error {
	const op = "create variables"
	rows := make([][]any, len(vs))
	var owners []variableOwner
	seen := map[variableOwner]bool{}
	for i, v := range vs {
		if err := checkScope(v.Scope, v.OwnerID); err != nil {
			return fmt.Errorf("sqlite: %s: record %d: %w", op, i, err)
		}
		rows[i] = []any{v.ID, v.AppID, v.Scope, v.OwnerID, v.Key, v.Value, v.Type, toMillis(v.CreatedAt), toMillis(v.UpdatedAt)}
		if o := (variableOwner{v.AppID, v.Scope, v.OwnerID}); !seen[o] {
			seen[o] = true
			owners = append(owners, o)
		}
	}
	return s.insertChecked(ctx, op, `INSERT INTO variables (`+variableCols+`) VALUES (`+placeholders(9)+`)`, rows,
		func(tx *sql.Tx) error {
			for _, o := range owners {
				if err := checkOwner(ctx, tx, op, o); err != nil {
					return err
				}
			}
			return nil
		})
}

func (s *Store) getVariableWhere(ctx context.Context, op, cond string, args ...any) (storage.Variable, error) {
	v, err := scanVariable(s.r.QueryRowContext(ctx, `SELECT `+variableCols+` FROM variables WHERE `+cond, args...))
	if err != nil {
		return storage.Variable{}, wrap(op, err)
	}
	return v, nil
}

// GetVariable reads the app's variable by id.
func (s *Store) GetVariable(ctx context.Context, appID, id string) (storage.Variable, error) {
	return s.getVariableWhere(ctx, "get variable", `app_id = ? AND id = ?`, appID, id)
}

// GetVariableByKey finds the variable with exactly this key in its scope and owner.
func (s *Store) GetVariableByKey(ctx context.Context, appID, scope, ownerID, key string) (storage.Variable, error) {
	return s.getVariableWhere(ctx, "get variable by key", `app_id = ? AND scope = ? AND owner_id = ? AND key = ?`,
		appID, scope, ownerID, key)
}

// ListVariables answers the variables of one scope and owner, sorted by key (as stored,
// byte order: the MongoDB engine compares strings the same way).
func (s *Store) ListVariables(ctx context.Context, appID, scope, ownerID string) ([]storage.Variable, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+variableCols+` FROM variables
WHERE app_id = ? AND scope = ? AND owner_id = ? ORDER BY key`, appID, scope, ownerID)
	if err != nil {
		return nil, wrap("list variables", err)
	}
	out, err := scanAll(rows, scanVariable)
	if err != nil {
		return nil, wrap("list variables", err)
	}
	return out, nil
}

// UpdateVariable applies fn to the app's variable in one write transaction (see
// updateRecord). The id, the app, the scope, the owner and the creation time are kept: a
// variable never moves to another owner. The unique index answers ErrConflict on a taken key.
func (s *Store) UpdateVariable(ctx context.Context, appID, id string, fn func(*storage.Variable) error) (storage.Variable, error) {
	return updateRecord(ctx, s, "update variable",
		func(tx *sql.Tx) (storage.Variable, error) {
			return scanVariable(tx.QueryRowContext(ctx, `SELECT `+variableCols+` FROM variables WHERE app_id = ? AND id = ?`, appID, id))
		},
		fn,
		func(cur storage.Variable, next *storage.Variable) {
			next.ID, next.AppID, next.Scope, next.OwnerID, next.CreatedAt = cur.ID, cur.AppID, cur.Scope, cur.OwnerID, cur.CreatedAt
			next.UpdatedAt = storage.Truncate(next.UpdatedAt)
		},
		func(tx *sql.Tx, next storage.Variable) error {
			_, err := tx.ExecContext(ctx, `UPDATE variables SET key = ?, value = ?, type = ?, updated_at = ? WHERE id = ?`,
				next.Key, next.Value, next.Type, toMillis(next.UpdatedAt), next.ID)
			return err
		})
}

// DeleteVariable removes the app's variable.
func (s *Store) DeleteVariable(ctx context.Context, appID, id string) error {
	return s.deleteOne(ctx, "delete variable", `DELETE FROM variables WHERE app_id = ? AND id = ?`, appID, id)
}

// fileCols is the column order of scanFile.
const fileCols = `id, app_id, name, version, size, sha256, blob_key, content_type, created_at, updated_at`

const fileSet = `name = ?, version = ?, size = ?, sha256 = ?, blob_key = ?, content_type = ?, updated_at = ?`

func fileSetArgs(f storage.File) []any {
	return []any{f.Name, f.Version, f.Size, f.SHA256, f.BlobKey, f.ContentType, toMillis(f.UpdatedAt)}
}

func scanFile(row scanner) (storage.File, error) {
	var f storage.File
	err := row.Scan(&f.ID, &f.AppID, &f.Name, &f.Version, &f.Size, &f.SHA256, &f.BlobKey, &f.ContentType,
		timeCol{&f.CreatedAt}, timeCol{&f.UpdatedAt})
	return f, err
}

// CreateFile inserts f; the foreign key answers ErrNotFound when the app does not exist.
func (s *Store) CreateFile(ctx context.Context, f storage.File) error {
	return s.insertAll(ctx, "create file", `INSERT INTO files (id, app_id, created_at,
	name, version, size, sha256, blob_key, content_type, updated_at)
VALUES (`+placeholders(10)+`)`, [][]any{append([]any{f.ID, f.AppID, toMillis(f.CreatedAt)}, fileSetArgs(f)...)})
}

func (s *Store) getFileWhere(ctx context.Context, op, cond string, args ...any) (storage.File, error) {
	f, err := scanFile(s.r.QueryRowContext(ctx, `SELECT `+fileCols+` FROM files WHERE `+cond, args...))
	if err != nil {
		return storage.File{}, wrap(op, err)
	}
	return f, nil
}

// GetFile reads the app's file by id.
func (s *Store) GetFile(ctx context.Context, appID, id string) (storage.File, error) {
	return s.getFileWhere(ctx, "get file", `app_id = ? AND id = ?`, appID, id)
}

// LatestFile answers the app's newest file (by creation time, then id) with the name, or
// of the whole app when name is "".
func (s *Store) LatestFile(ctx context.Context, appID, name string) (storage.File, error) {
	if name == "" {
		return s.getFileWhere(ctx, "latest file", `app_id = ? ORDER BY `+orderBy("created_at", true)+` LIMIT 1`, appID)
	}
	return s.getFileWhere(ctx, "latest file", `app_id = ? AND name = ? ORDER BY `+orderBy("created_at", true)+` LIMIT 1`, appID, name)
}

// ListFiles answers every file of the app, newest first.
func (s *Store) ListFiles(ctx context.Context, appID string) ([]storage.File, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT `+fileCols+` FROM files WHERE app_id = ? ORDER BY `+orderBy("created_at", true), appID)
	if err != nil {
		return nil, wrap("list files", err)
	}
	out, err := scanAll(rows, scanFile)
	if err != nil {
		return nil, wrap("list files", err)
	}
	return out, nil
}

// UpdateFile applies fn to the app's file in one write transaction (see updateRecord). The
// id, the app and the creation time are kept.
func (s *Store) UpdateFile(ctx context.Context, appID, id string, fn func(*storage.File) error) (storage.File, error) {
	return updateRecord(ctx, s, "update file",
		func(tx *sql.Tx) (storage.File, error) {
			return scanFile(tx.QueryRowContext(ctx, `SELECT `+fileCols+` FROM files WHERE app_id = ? AND id = ?`, appID, id))
		},
		fn,
		func(cur storage.File, next *storage.File) {
			next.ID, next.AppID, next.CreatedAt = cur.ID, cur.AppID, cur.CreatedAt
			next.UpdatedAt = storage.Truncate(next.UpdatedAt)
		},
		func(tx *sql.Tx, next storage.File) error {
			_, err := tx.ExecContext(ctx, `UPDATE files SET `+fileSet+` WHERE id = ?`, append(fileSetArgs(next), next.ID)...)
			return err
		})
}

// DeleteFile removes the app's file record (its blob is the caller's).
func (s *Store) DeleteFile(ctx context.Context, appID, id string) error {
	return s.deleteOne(ctx, "delete file", `DELETE FROM files WHERE app_id = ? AND id = ?`, appID, id)
}

// ruleCols is the column order of scanRule.
const ruleCols = `id, app_id, type, action, value, note, enabled, created_at, updated_at`

const ruleSet = `type = ?, action = ?, value = ?, note = ?, enabled = ?, updated_at = ?`

func ruleSetArgs(r storage.Rule) []any {
	return []any{r.Type, r.Action, r.Value, r.Note, r.Enabled, toMillis(r.UpdatedAt)}
}

func scanRule(row scanner) (storage.Rule, error) {
	var r storage.Rule
	err := row.Scan(&r.ID, &r.AppID, &r.Type, &r.Action, &r.Value, &r.Note, &r.Enabled,
		timeCol{&r.CreatedAt}, timeCol{&r.UpdatedAt})
	return r, err
}

// CreateRules inserts every rule in one transaction: a duplicate (ErrConflict, also within
// the batch) or an unknown app (ErrNotFound) leaves none inserted.
func (s *Store) CreateRules(ctx context.Context, rs []storage.Rule) error {
	rows := make([][]any, len(rs))
	for i, r := range rs {
		rows[i] = append([]any{r.ID, r.AppID, toMillis(r.CreatedAt)}, ruleSetArgs(r)...)
	}
	return s.insertAll(ctx, "create rules", `INSERT INTO rules (id, app_id, created_at,
	type, action, value, note, enabled, updated_at)
VALUES (`+placeholders(9)+`)`, rows)
}

// GetRule reads the app's rule by id.
func (s *Store) GetRule(ctx context.Context, appID, id string) (storage.Rule, error) {
	r, err := scanRule(s.r.QueryRowContext(ctx, `SELECT `+ruleCols+` FROM rules WHERE app_id = ? AND id = ?`, appID, id))
	if err != nil {
		return storage.Rule{}, wrap("get rule", err)
	}
	return r, nil
}

// ListRules answers the app's rules matching q, oldest first.
func (s *Store) ListRules(ctx context.Context, appID string, q storage.RuleQuery) ([]storage.Rule, error) {
	var w where
	w.add("app_id = ?", appID)
	if q.Type != "" {
		w.add("type = ?", q.Type)
	}
	if q.Action != "" {
		w.add("action = ?", q.Action)
	}
	rows, err := s.r.QueryContext(ctx, `SELECT `+ruleCols+` FROM rules WHERE `+w.sql()+` ORDER BY `+orderBy("created_at", false), w.args...)
	if err != nil {
		return nil, wrap("list rules", err)
	}
	out, err := scanAll(rows, scanRule)
	if err != nil {
		return nil, wrap("list rules", err)
	}
	return out, nil
}

// UpdateRule applies fn to the app's rule in one write transaction (see updateRecord). The
// id, the app and the creation time are kept; the unique index answers ErrConflict.
func (s *Store) UpdateRule(ctx context.Context, appID, id string, fn func(*storage.Rule) error) (storage.Rule, error) {
	return updateRecord(ctx, s, "update rule",
		func(tx *sql.Tx) (storage.Rule, error) {
			return scanRule(tx.QueryRowContext(ctx, `SELECT `+ruleCols+` FROM rules WHERE app_id = ? AND id = ?`, appID, id))
		},
		fn,
		func(cur storage.Rule, next *storage.Rule) {
			next.ID, next.AppID, next.CreatedAt = cur.ID, cur.AppID, cur.CreatedAt
			next.UpdatedAt = storage.Truncate(next.UpdatedAt)
		},
		func(tx *sql.Tx, next storage.Rule) error {
			_, err := tx.ExecContext(ctx, `UPDATE rules SET `+ruleSet+` WHERE id = ?`, append(ruleSetArgs(next), next.ID)...)
			return err
		})
}

// DeleteRule removes the app's rule.
func (s *Store) DeleteRule(ctx context.Context, appID, id string) error {
	return s.deleteOne(ctx, "delete rule", `DELETE FROM rules WHERE app_id = ? AND id = ?`, appID, id)
}

// deleteOwnedVariables removes the variables of owners of one scope of the app, inside a
// delete of those owners.
func deleteOwnedVariables(ctx context.Context, tx *sql.Tx, appID, scope string, ownerIDs ...string) error {
	if len(ownerIDs) == 0 {
		return nil
	}
	args := make([]any, 0, len(ownerIDs)+2)
	args = append(args, appID, scope)
	for _, id := range ownerIDs {
		args = append(args, id)
	}
	_, err := tx.ExecContext(ctx, `DELETE FROM variables WHERE app_id = ? AND scope = ? AND owner_id IN (`+
		placeholders(len(ownerIDs))+`)`, args...)
	return err
}
