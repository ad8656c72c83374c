package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/keyward/keyward/storage"
)

// accountCols is the column order of scanAccount.
const accountCols = `id, username, email, password_hash, role, plan, email_verified,
	two_factor_enabled, two_factor_secret, two_factor_pending, two_factor_last_step,
	api_key_hash, api_key_prefix, api_key_last4, tokens_valid_after, api_calls_used,
	api_calls_reset_at, last_login_at, created_at, updated_at`

// accountSet assigns every mutable column, in the order of accountSetArgs.
const accountSet = `username = ?, username_lower = ?, email = ?, email_lower = ?,
	password_hash = ?, role = ?, plan = ?, email_verified = ?,
	two_factor_enabled = ?, two_factor_secret = ?, two_factor_pending = ?, two_factor_last_step = ?,
	api_key_hash = ?, api_key_prefix = ?, api_key_last4 = ?, tokens_valid_after = ?,
	api_calls_used = ?, api_calls_reset_at = ?, last_login_at = ?, updated_at = ?`

func accountSetArgs(a storage.Account) []any {
	return []any{
		a.Username, strings.ToLower(a.Username), a.Email, strings.ToLower(a.Email),
		a.PasswordHash, a.Role, a.Plan, a.EmailVerified,
		a.TwoFactorEnabled, a.TwoFactorSecret, a.TwoFactorPending, a.TwoFactorLastStep,
		a.APIKeyHash, a.APIKeyPrefix, a.APIKeyLast4, toMillis(a.TokensValidAfter),
		a.APICallsUsed, toMillis(a.APICallsResetAt), toMillis(a.LastLoginAt), toMillis(a.UpdatedAt),
	}
}

type scanner interface{ Scan(dest ...any) error }

// scanAccount reads a row and opens its sealed secrets.
func (s *Store) scanAccount(row scanner) (storage.Account, error) {
	a, err := scanStoredAccount(row)
	if err != nil {
		return storage.Account{}, err
	}
	if err := storage.OpenAccount(s.sealer, &a); err != nil {
		return storage.Account{}, err
	}
	return a, nil
}

// scanStoredAccount reads a row as stored (secrets sealed).
func scanStoredAccount(row scanner) (storage.Account, error) {
	var (
		a                                                storage.Account
		validAfter, resetAt, lastLogin, created, updated int64
	)
	err := row.Scan(&a.ID, &a.Username, &a.Email, &a.PasswordHash, &a.Role, &a.Plan, &a.EmailVerified,
		&a.TwoFactorEnabled, &a.TwoFactorSecret, &a.TwoFactorPending, &a.TwoFactorLastStep,
		&a.APIKeyHash, &a.APIKeyPrefix, &a.APIKeyLast4, &validAfter, &a.APICallsUsed,
		&resetAt, &lastLogin, &created, &updated)
	if err != nil {
		return storage.Account{}, err
	}
	a.TokensValidAfter = fromMillis(validAfter)
	a.APICallsResetAt = fromMillis(resetAt)
	a.LastLoginAt = fromMillis(lastLogin)
	a.CreatedAt = fromMillis(created)
	a.UpdatedAt = fromMillis(updated)
	return a, nil
}

// normalize brings a's times to what the columns keep, so the value UpdateAccount returns
// is exactly what a later read answers even if a caller forgot storage.Truncate.
func normalize(a *storage.Account) {
	for _, t := range []*time.Time{&a.TokensValidAfter, &a.APICallsResetAt, &a.LastLoginAt, &a.CreatedAt, &a.UpdatedAt} {
		*t = storage.Truncate(*t)
	}
}

// CreateAccount inserts a; the unique indexes on id, username_lower and email_lower answer
// ErrConflict.
func (s *Store) CreateAccount(ctx context.Context, a storage.Account) error {
	if err := storage.SealAccount(s.sealer, &a); err != nil {
		return wrap("create account", err)
	}
	args := append([]any{a.ID, toMillis(a.CreatedAt)}, accountSetArgs(a)...)
	_, err := s.w.ExecContext(ctx, `INSERT INTO accounts (id, created_at, username, username_lower, email, email_lower,
	password_hash, role, plan, email_verified,
	two_factor_enabled, two_factor_secret, two_factor_pending, two_factor_last_step,
	api_key_hash, api_key_prefix, api_key_last4, tokens_valid_after,
	api_calls_used, api_calls_reset_at, last_login_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`, args...)
	if err != nil {
		return wrap("create account", err)
	}
	return nil
}

func (s *Store) getAccountWhere(ctx context.Context, op, where string, arg any) (storage.Account, error) {
	a, err := s.scanAccount(s.r.QueryRowContext(ctx, `SELECT `+accountCols+` FROM accounts WHERE `+where, arg))
	if err != nil {
		return storage.Account{}, wrap(op, err)
	}
	return a, nil
}

// GetAccount reads one account by id.
func (s *Store) GetAccount(ctx context.Context, id string) (storage.Account, error) {
	return s.getAccountWhere(ctx, "get account", `id = ?`, id)
}

// GetAccountByUsername finds the account whose username equals username, ignoring case.
func (s *Store) GetAccountByUsername(ctx context.Context, username string) (storage.Account, error) {
	return s.getAccountWhere(ctx, "get account by username", `username_lower = ?`, strings.ToLower(username))
}

// GetAccountByEmail finds the account whose email equals email, ignoring case.
func (s *Store) GetAccountByEmail(ctx context.Context, email string) (storage.Account, error) {
	return s.getAccountWhere(ctx, "get account by email", `email_lower = ?`, strings.ToLower(email))
}

// GetAccountByAPIKeyHash finds the account whose current API key hashes to hash.
func (s *Store) GetAccountByAPIKeyHash(ctx context.Context, hash string) (storage.Account, error) {
	// Accounts without a key store "": that must never authenticate anyone.
	if hash == "" {
		return storage.Account{}, wrap("get account by api key", sql.ErrNoRows)
	}
	return s.getAccountWhere(ctx, "get account by api key", `api_key_hash = ?`, hash)
}

// UpdateAccount runs read, fn and write in one IMMEDIATE transaction on the single writer
// connection, so no other writer — in this process or another — interleaves.
func (s *Store) UpdateAccount(ctx context.Context, id string, fn func(*storage.Account) error) (storage.Account, error) {
	const op = "update account"
	var out storage.Account
	// inWriteTx: a plan change's events (one per app of the account) go in its transaction.
	err := s.inWriteTx(ctx, op, func(tx *sql.Tx) error {
		cur, err := s.scanAccount(tx.QueryRowContext(ctx, `SELECT `+accountCols+` FROM accounts WHERE id = ?`, id))
		if err != nil {
			return wrap(op, err)
		}
		next := cur
		if err := fn(&next); err != nil {
			return err
		}
		next.ID, next.CreatedAt = cur.ID, cur.CreatedAt
		normalize(&next)

		stored := next
		if err := storage.SealAccount(s.sealer, &stored); err != nil {
			return wrap(op, err)
		}
		if _, err := tx.ExecContext(ctx, `UPDATE accounts SET `+accountSet+` WHERE id = ?`,
			append(accountSetArgs(stored), id)...); err != nil {
			return wrap(op, err)
		}
		out = next
		return nil
	})
	if err != nil {
		return storage.Account{}, err
	}
	return out, nil
}

// DeleteAccount removes the account; ON DELETE CASCADE removes its tokens in the same
// statement.
func (s *Store) DeleteAccount(ctx context.Context, id string) error {
	res, err := s.w.ExecContext(ctx, `DELETE FROM accounts WHERE id = ?`, id)
	if err != nil {
		return wrap("delete account", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return wrap("delete account", err)
	}
	if n == 0 {
		return wrap("delete account", sql.ErrNoRows)
	}
	return nil
}

// ListAccounts answers one page, oldest first, and the number of matches.
func (s *Store) ListAccounts(ctx context.Context, q storage.AccountQuery) ([]storage.Account, int, error) {
	page := q.Page.Normalize()
	// instr on the lowered copies rather than LIKE: the search is a literal substring, so
	// '%' and '_' in it must not act as wildcards, and LIKE only folds ASCII case.
	const where = `(? = '' OR instr(username_lower, ?) > 0 OR instr(email_lower, ?) > 0)`
	search := strings.ToLower(q.Search)

	// One read transaction, so the page and the total come from the same snapshot.
	tx, err := s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, 0, wrap("list accounts", err)
	}
	defer tx.Rollback() //nolint:errcheck // read-only

	var total int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM accounts WHERE `+where, search, search, search).Scan(&total); err != nil {
		return nil, 0, wrap("list accounts: count", err)
	}
	rows, err := tx.QueryContext(ctx, `SELECT `+accountCols+` FROM accounts WHERE `+where+`
ORDER BY created_at, id LIMIT ? OFFSET ?`, search, search, search, page.Limit, page.Offset)
	if err != nil {
		return nil, 0, wrap("list accounts", err)
	}
	defer rows.Close()
	var out []storage.Account
	for rows.Next() {
		a, err := s.scanAccount(rows)
		if err != nil {
			return nil, 0, wrap("list accounts", err)
		}
		out = append(out, a)
	}
	if err := rows.Err(); err != nil {
		return nil, 0, wrap("list accounts", err)
	}
	return out, total, nil
}

// CreateAccountToken stores t. The foreign key refuses a token of an unknown account.
func (s *Store) CreateAccountToken(ctx context.Context, t storage.AccountToken) error {
	// In a write transaction: an email change's audit entry (storage.AuditOutbox) goes with it.
	return s.inWriteTx(ctx, "create account token", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO account_tokens (hash, account_id, purpose, expires_at, created_at)
VALUES (?, ?, ?, ?, ?)`, t.Hash, t.AccountID, t.Purpose, toMillis(t.ExpiresAt), toMillis(t.CreatedAt))
		if isForeignKey(err) {
			return wrap("create account token: account "+t.AccountID, sql.ErrNoRows)
		}
		return wrapIf("create account token", err)
	})
}

// ConsumeAccountToken deletes and returns the token in one statement: SQLite runs it under
// the write lock, so of concurrent consumers exactly one gets the row back.
func (s *Store) ConsumeAccountToken(ctx context.Context, purpose, hash string, now time.Time) (storage.AccountToken, error) {
	t := storage.AccountToken{Hash: hash, Purpose: purpose}
	var expires, created int64
	err := s.w.QueryRowContext(ctx, `DELETE FROM account_tokens
WHERE hash = ? AND purpose = ? AND expires_at > ?
RETURNING account_id, expires_at, created_at`, hash, purpose, now.UnixMilli()).Scan(&t.AccountID, &expires, &created)
	if err != nil {
		return storage.AccountToken{}, wrap("consume account token", err)
	}
	t.ExpiresAt, t.CreatedAt = fromMillis(expires), fromMillis(created)
	return t, nil
}

// DeleteAccountTokens removes the account's tokens with purpose; none is not an error.
func (s *Store) DeleteAccountTokens(ctx context.Context, accountID, purpose string) error {
	if _, err := s.w.ExecContext(ctx, `DELETE FROM account_tokens WHERE account_id = ? AND purpose = ?`, accountID, purpose); err != nil {
		return wrap("delete account tokens", err)
	}
	return nil
}
