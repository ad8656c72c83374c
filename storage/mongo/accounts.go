package mongo

import (
	"context"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/keyward/keyward/storage"
)

// accountDoc is an account as stored. Zero times are left out of the document (omitempty)
// rather than stored as year 1, so they read back as the zero time.Time.
type accountDoc struct {
	ID string `bson:"_id"`
	// Version changes at every write (from a random start, see newVersion);
	// UpdateAccount replaces a document only at the version it read.
	Version  int64  `bson:"version"`
	Username string `bson:"username"`
	// UsernameLower and EmailLower carry the unique indexes: FerretDB has no collation,
	// so case-insensitivity comes from lower-cased copies.
	UsernameLower     string    `bson:"usernameLower"`
	Email             string    `bson:"email"`
	EmailLower        string    `bson:"emailLower"`
	PasswordHash      string    `bson:"passwordHash"`
	Role              string    `bson:"role"`
	Plan              string    `bson:"plan"`
	EmailVerified     bool      `bson:"emailVerified"`
	TwoFactorEnabled  bool      `bson:"twoFactorEnabled"`
	TwoFactorSecret   string    `bson:"twoFactorSecret"`
	TwoFactorPending  string    `bson:"twoFactorPending"`
	TwoFactorLastStep int64     `bson:"twoFactorLastStep"`
	APIKeyHash        string    `bson:"apiKeyHash"`
	APIKeyPrefix      string    `bson:"apiKeyPrefix"`
	APIKeyLast4       string    `bson:"apiKeyLast4"`
	TokensValidAfter  time.Time `bson:"tokensValidAfter,omitempty"`
	APICallsUsed      int64     `bson:"apiCallsUsed"`
	APICallsResetAt   time.Time `bson:"apiCallsResetAt,omitempty"`
	LastLoginAt       time.Time `bson:"lastLoginAt,omitempty"`
	CreatedAt         time.Time `bson:"createdAt,omitempty"`
	UpdatedAt         time.Time `bson:"updatedAt,omitempty"`
}

func toAccountDoc(a storage.Account, version int64) accountDoc {
	return accountDoc{
		ID:                a.ID,
		Version:           version,
		Username:          a.Username,
		UsernameLower:     strings.ToLower(a.Username),
		Email:             a.Email,
		EmailLower:        strings.ToLower(a.Email),
		PasswordHash:      a.PasswordHash,
		Role:              a.Role,
		Plan:              a.Plan,
		EmailVerified:     a.EmailVerified,
		TwoFactorEnabled:  a.TwoFactorEnabled,
		TwoFactorSecret:   a.TwoFactorSecret,
		TwoFactorPending:  a.TwoFactorPending,
		TwoFactorLastStep: a.TwoFactorLastStep,
		APIKeyHash:        a.APIKeyHash,
		APIKeyPrefix:      a.APIKeyPrefix,
		APIKeyLast4:       a.APIKeyLast4,
		TokensValidAfter:  storage.Truncate(a.TokensValidAfter),
		APICallsUsed:      a.APICallsUsed,
		APICallsResetAt:   storage.Truncate(a.APICallsResetAt),
		LastLoginAt:       storage.Truncate(a.LastLoginAt),
		CreatedAt:         storage.Truncate(a.CreatedAt),
		UpdatedAt:         storage.Truncate(a.UpdatedAt),
	}
}

func (d accountDoc) account() storage.Account {
	return storage.Account{
		ID:                d.ID,
		Username:          d.Username,
		Email:             d.Email,
		PasswordHash:      d.PasswordHash,
		Role:              d.Role,
		Plan:              d.Plan,
		EmailVerified:     d.EmailVerified,
		TwoFactorEnabled:  d.TwoFactorEnabled,
		TwoFactorSecret:   d.TwoFactorSecret,
		TwoFactorPending:  d.TwoFactorPending,
		TwoFactorLastStep: d.TwoFactorLastStep,
		APIKeyHash:        d.APIKeyHash,
		APIKeyPrefix:      d.APIKeyPrefix,
		APIKeyLast4:       d.APIKeyLast4,
		TokensValidAfter:  fromDate(d.TokensValidAfter),
		APICallsUsed:      d.APICallsUsed,
		APICallsResetAt:   fromDate(d.APICallsResetAt),
		LastLoginAt:       fromDate(d.LastLoginAt),
		CreatedAt:         fromDate(d.CreatedAt),
		UpdatedAt:         fromDate(d.UpdatedAt),
	}
}

// tokenDoc is a mailed token; its hash is the _id, which makes it unique for free.
type tokenDoc struct {
	Hash      string    `bson:"_id"`
	AccountID string    `bson:"accountId"`
	Purpose   string    `bson:"purpose"`
	ExpiresAt time.Time `bson:"expiresAt,omitempty"`
	CreatedAt time.Time `bson:"createdAt,omitempty"`
}

func (d tokenDoc) token() storage.AccountToken {
	return storage.AccountToken{
		Hash:      d.Hash,
		AccountID: d.AccountID,
		Purpose:   d.Purpose,
		ExpiresAt: fromDate(d.ExpiresAt),
		CreatedAt: fromDate(d.CreatedAt),
	}
}

// CreateAccount inserts a; the unique _id, usernameLower and emailLower indexes answer
// ErrConflict.
func (s *Store) CreateAccount(ctx context.Context, a storage.Account) error {
	if err := storage.SealAccount(s.sealer, &a); err != nil {
		return wrap("create account", err)
	}
	if _, err := s.accounts.InsertOne(ctx, toAccountDoc(a, newVersion())); err != nil {
		return wrap("create account", err)
	}
	return nil
}

func (s *Store) findAccount(ctx context.Context, op string, filter bson.D) (storage.Account, error) {
	var d accountDoc
	if err := s.accounts.FindOne(ctx, filter).Decode(&d); err != nil {
		return storage.Account{}, wrap(op, err)
	}
	return s.openAccount(op, d)
}

// openAccount converts a stored document, opening its sealed secrets.
func (s *Store) openAccount(op string, d accountDoc) (storage.Account, error) {
	a := d.account()
	if err := storage.OpenAccount(s.sealer, &a); err != nil {
		return storage.Account{}, wrap(op, err)
	}
	return a, nil
}

// GetAccount reads one account by id.
func (s *Store) GetAccount(ctx context.Context, id string) (storage.Account, error) {
	return s.findAccount(ctx, "get account", bson.D{{Key: "_id", Value: id}})
}

// GetAccountByUsername finds the account whose username equals username, ignoring case.
func (s *Store) GetAccountByUsername(ctx context.Context, username string) (storage.Account, error) {
	return s.findAccount(ctx, "get account by username", bson.D{{Key: "usernameLower", Value: strings.ToLower(username)}})
}

// GetAccountByEmail finds the account whose email equals email, ignoring case.
func (s *Store) GetAccountByEmail(ctx context.Context, email string) (storage.Account, error) {
	return s.findAccount(ctx, "get account by email", bson.D{{Key: "emailLower", Value: strings.ToLower(email)}})
}

// GetAccountByAPIKeyHash finds the account whose current API key hashes to hash.
func (s *Store) GetAccountByAPIKeyHash(ctx context.Context, hash string) (storage.Account, error) {
	// Accounts without a key store "": that must never authenticate anyone.
	if hash == "" {
		return storage.Account{}, wrap("get account by api key", mongo.ErrNoDocuments)
	}
	return s.findAccount(ctx, "get account by api key", bson.D{{Key: "apiKeyHash", Value: hash}})
}

// claimKey implements versioned: an account owns its own claims.
func (d accountDoc) claimKey() (string, int64, string) { return d.ID, d.Version, d.ID }

// UpdateAccount applies fn under a version claim (see updateDoc).
func (s *Store) UpdateAccount(ctx context.Context, id string, fn func(*storage.Account) error) (storage.Account, error) {
	d, err := updateDoc(ctx, s, s.accounts, "update account", bson.D{{Key: "_id", Value: id}},
		func(cur accountDoc) (accountDoc, error) {
			next, err := s.openAccount("update account", cur)
			if err != nil {
				return accountDoc{}, err
			}
			if err := fn(&next); err != nil {
				return accountDoc{}, err
			}
			next.ID = cur.ID
			if err := storage.SealAccount(s.sealer, &next); err != nil {
				return accountDoc{}, wrap("update account", err)
			}
			doc := toAccountDoc(next, cur.Version+1)
			doc.ID, doc.CreatedAt = cur.ID, cur.CreatedAt
			return doc, nil
		})
	if err != nil {
		return storage.Account{}, err
	}
	return s.openAccount("update account", d)
}

// DeleteAccount removes the account, then its tokens.
func (s *Store) DeleteAccount(ctx context.Context, id string) error {
	res, err := s.accounts.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}})
	if err != nil {
		return wrap("delete account", err)
	}
	// Tokens go even when the account was already gone, so that retrying a delete that
	// failed between the two steps finishes the job.
	if _, err := s.accountTokens.DeleteMany(ctx, bson.D{{Key: "accountId", Value: id}}); err != nil {
		return wrap("delete account: tokens", err)
	}
	if _, err := s.apiKeys.DeleteMany(ctx, bson.D{{Key: "accountId", Value: id}}); err != nil {
		return wrap("delete account: API keys", err)
	}
	if _, err := s.ownerSessions.DeleteMany(ctx, bson.D{{Key: "accountId", Value: id}}); err != nil {
		return wrap("delete account: owner sessions", err)
	}
	if _, err := s.recoveryCodes.DeleteMany(ctx, bson.D{{Key: "accountId", Value: id}}); err != nil {
		return wrap("delete account: recovery codes", err)
	}
	if _, err := s.passkeys.DeleteMany(ctx, bson.D{{Key: "accountId", Value: id}}); err != nil {
		return wrap("delete account: passkeys", err)
	}
	// Claims left by updaters that died would otherwise outlive the account.
	if err := s.deleteClaims(ctx, id); err != nil {
		return wrap("delete account: claims", err)
	}
	if res.DeletedCount == 0 {
		return wrap("delete account", mongo.ErrNoDocuments)
	}
	return nil
}

// ListAccounts answers one page, oldest first, and the number of matches. The page and the
// total are two reads without a common snapshot (FerretDB has no transactions), so under
// concurrent writes the total may be off by the accounts created in between.
func (s *Store) ListAccounts(ctx context.Context, q storage.AccountQuery) ([]storage.Account, int, error) {
	filter := searchAny(bson.D{}, q.Search, "usernameLower", "emailLower")
	list, total, err := listDocs(ctx, s.accounts, "list accounts", filter, sortBy("createdAt", false), q.Page, accountDoc.account)
	if err != nil {
		return nil, 0, err
	}
	for i := range list {
		if err := storage.OpenAccount(s.sealer, &list[i]); err != nil {
			return nil, 0, wrap("list accounts", err)
		}
	}
	return list, total, nil
}

// CreateAccountToken stores t, refusing a token of an unknown account (ErrNotFound) as the
// SQLite engine's foreign key does.
func (s *Store) CreateAccountToken(ctx context.Context, t storage.AccountToken) error {
	doc := tokenDoc{
		Hash:      t.Hash,
		AccountID: t.AccountID,
		Purpose:   t.Purpose,
		ExpiresAt: storage.Truncate(t.ExpiresAt),
		CreatedAt: storage.Truncate(t.CreatedAt),
	}
	// insertOwned checks the account after the insert, not before, closing the window in
	// which DeleteAccount could miss a token written for the account it is removing.
	return s.insertOwned(ctx, "create account token", s.accountTokens, []any{doc},
		bson.D{{Key: "_id", Value: t.Hash}},
		[]parentRef{{what: "account " + t.AccountID, coll: s.accounts, filter: bson.D{{Key: "_id", Value: t.AccountID}}}})
}

// ConsumeAccountToken deletes and returns the token if it is live at now.
//
// FindOneAndDelete would be the MongoDB way, but FerretDB 1.x runs it as a query followed
// by a delete and reports the document to every concurrent caller. The number of
// documents a delete removed is exact on both servers, so the token is read first and the
// caller whose delete removed it is the one winner.
func (s *Store) ConsumeAccountToken(ctx context.Context, purpose, hash string, now time.Time) (storage.AccountToken, error) {
	filter := bson.D{
		{Key: "_id", Value: hash},
		{Key: "purpose", Value: purpose},
		{Key: "expiresAt", Value: bson.D{{Key: "$gt", Value: now}}},
	}
	var d tokenDoc
	if err := s.accountTokens.FindOne(ctx, filter).Decode(&d); err != nil {
		return storage.AccountToken{}, wrap("consume account token", err)
	}
	res, err := s.accountTokens.DeleteOne(ctx, filter)
	if err != nil {
		return storage.AccountToken{}, wrap("consume account token", err)
	}
	if res.DeletedCount != 1 {
		// Another consumer won.
		return storage.AccountToken{}, wrap("consume account token", mongo.ErrNoDocuments)
	}
	return d.token(), nil
}

// DeleteAccountTokens removes the account's tokens with purpose; none is not an error.
func (s *Store) DeleteAccountTokens(ctx context.Context, accountID, purpose string) error {
	if _, err := s.accountTokens.DeleteMany(ctx, bson.D{{Key: "accountId", Value: accountID}, {Key: "purpose", Value: purpose}}); err != nil {
		return wrap("delete account tokens", err)
	}
	return nil
}
