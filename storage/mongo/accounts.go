package mongo

import (
	"context"
	"errors"

	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/keyward/keyward/storage"
)

// accountDoc is an account as stored. Zero times are left out of the document (omitempty)
// rather than stored as year 1, so they read back as the zero time.Time.
type accountDoc struct {
	ID string `bson:"_id"`
	// Version changes at every write (from a random start, see CreateAccount);
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
	// The version starts at a random value, not 1: an updater that read an account which
	// is then deleted and created again under the same id must not find "its" version on
	// the new record and overwrite it with the old one's fields.
	version := rand.Int64N(1<<62) + 1
	if _, err := s.accounts.InsertOne(ctx, toAccountDoc(a, version)); err != nil {
		return wrap("create account", err)
	}
	return nil
}

func (s *Store) findAccount(ctx context.Context, op string, filter bson.D) (accountDoc, error) {
	var d accountDoc
	if err := s.accounts.FindOne(ctx, filter).Decode(&d); err != nil {
		return accountDoc{}, wrap(op, err)
	}
	return d, nil
}

// GetAccount reads one account by id.
func (s *Store) GetAccount(ctx context.Context, id string) (storage.Account, error) {
	d, err := s.findAccount(ctx, "get account", bson.D{{Key: "_id", Value: id}})
	return d.account(), err
}

// GetAccountByUsername finds the account whose username equals username, ignoring case.
func (s *Store) GetAccountByUsername(ctx context.Context, username string) (storage.Account, error) {
	d, err := s.findAccount(ctx, "get account by username", bson.D{{Key: "usernameLower", Value: strings.ToLower(username)}})
	return d.account(), err
}

// GetAccountByEmail finds the account whose email equals email, ignoring case.
func (s *Store) GetAccountByEmail(ctx context.Context, email string) (storage.Account, error) {
	d, err := s.findAccount(ctx, "get account by email", bson.D{{Key: "emailLower", Value: strings.ToLower(email)}})
	return d.account(), err
}

// GetAccountByAPIKeyHash finds the account whose current API key hashes to hash.
func (s *Store) GetAccountByAPIKeyHash(ctx context.Context, hash string) (storage.Account, error) {
	// Accounts without a key store "": that must never authenticate anyone.
	if hash == "" {
		return storage.Account{}, wrap("get account by api key", mongo.ErrNoDocuments)
	}
	d, err := s.findAccount(ctx, "get account by api key", bson.D{{Key: "apiKeyHash", Value: hash}})
	return d.account(), err
}

// UpdateAccount is optimistic: read, apply fn, then replace the document only if it is
// still at the version read, else start again.
//
// The replace filtered by {_id, version} is an atomic compare-and-swap on MongoDB, but not
// on FerretDB 1.x, whose update runs as a query followed by an unconditional write by _id:
// two updaters that read the same version can both match and one write is lost. So, to
// work on both, an updater first claims the version it is about to write by inserting a
// claim document whose _id names the account and that version. Inserting into the unique
// _id index is atomic on both servers, so exactly one updater holds the claim for version
// v+1, and only it replaces version v. The claim is removed once the replace is done; on
// MongoDB it is redundant, and costs two small writes.
func (s *Store) UpdateAccount(ctx context.Context, id string, fn func(*storage.Account) error) (storage.Account, error) {
	for attempt := 0; ; attempt++ {
		cur, err := s.findAccount(ctx, "update account", bson.D{{Key: "_id", Value: id}})
		if err != nil {
			return storage.Account{}, err
		}
		next := cur.account()
		if err := fn(&next); err != nil {
			return storage.Account{}, err
		}
		doc := toAccountDoc(next, cur.Version+1)
		doc.ID, doc.CreatedAt = cur.ID, cur.CreatedAt

		matched, err := s.replaceClaimed(ctx, cur, doc)
		if err != nil {
			return storage.Account{}, wrap("update account", err)
		}
		if matched {
			return doc.account(), nil
		}
		if err := backoff(ctx, attempt); err != nil {
			return storage.Account{}, wrap("update account", err)
		}
	}
}

// claimDoc reserves the write of one version of one account.
type claimDoc struct {
	ID        string    `bson:"_id"` // "<account id>#<version>"
	AccountID string    `bson:"accountId"`
	At        time.Time `bson:"at"`
}

// claimLease is how long a claim protects its version. A claim older than this is taken to
// be left by an updater that died between claiming and releasing, and is removed so that
// the account does not stay locked. An updater's own replace is bounded to half of it.
const claimLease = 30 * time.Second

// replaceClaimed writes next over cur if cur is still the stored version. It answers false
// when another updater got there first (or holds the claim), and the caller starts again.
func (s *Store) replaceClaimed(ctx context.Context, cur, next accountDoc) (bool, error) {
	claim := claimDoc{
		ID:        fmt.Sprintf("%s#%d", cur.ID, next.Version),
		AccountID: cur.ID,
		At:        storage.Now(),
	}
	if _, err := s.claims.InsertOne(ctx, claim); err != nil {
		if !isDuplicateKey(err) {
			return false, err
		}
		return false, s.clearStaleClaim(ctx, claim.ID)
	}
	// Release even if ctx is cancelled meanwhile: a claim left behind blocks this version
	// for the whole lease.
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), serverSelectionTimeout)
		defer cancel()
		_, _ = s.claims.DeleteOne(rctx, bson.D{{Key: "_id", Value: claim.ID}})
	}()

	wctx, cancel := context.WithTimeout(ctx, claimLease/2)
	defer cancel()
	res, err := s.accounts.ReplaceOne(wctx, bson.D{{Key: "_id", Value: cur.ID}, {Key: "version", Value: cur.Version}}, next)
	if err != nil {
		return false, err
	}
	return res.MatchedCount == 1, nil
}

// clearStaleClaim removes the claim id if it has outlived claimLease. The delete is
// filtered by the claim's time, so a fresh claim made under the same id meanwhile stays.
func (s *Store) clearStaleClaim(ctx context.Context, id string) error {
	var c claimDoc
	err := s.claims.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&c)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return nil // released meanwhile
	}
	if err != nil {
		return err
	}
	if time.Since(c.At) < claimLease {
		return nil
	}
	_, err = s.claims.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}, {Key: "at", Value: c.At}})
	return err
}

// backoff sleeps a little, more as attempts grow, with jitter so that colliding updaters
// spread out. It gives up after maxAttempts, so that a bug can never spin forever.
func backoff(ctx context.Context, attempt int) error {
	if attempt >= maxAttempts {
		return fmt.Errorf("gave up after %d attempts under contention", attempt+1)
	}
	d := time.Duration(rand.Int64N(int64(time.Millisecond) << min(attempt, 6)))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

const maxAttempts = 200

// DeleteAccount removes the account, then its tokens.
func (s *Store) DeleteAccount(ctx context.Context, id string) error {
	res, err := s.accounts.DeleteOne(ctx, bson.D{{Key: "_id", Value: id}})
	if err != nil {
		return wrap("delete account", err)
	}
	// Tokens go even when the account was already gone, so that retrying a delete that
	// failed between the two steps finishes the job.
	if _, err := s.tokens.DeleteMany(ctx, bson.D{{Key: "accountId", Value: id}}); err != nil {
		return wrap("delete account: tokens", err)
	}
	// Claims left by updaters that died would otherwise outlive the account.
	if _, err := s.claims.DeleteMany(ctx, bson.D{{Key: "accountId", Value: id}}); err != nil {
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
	page := q.Page.Normalize()
	filter := bson.D{}
	if q.Search != "" {
		// $regex with a quoted pattern is a literal substring search that FerretDB and
		// MongoDB both run. It searches the lower-cased copies, like the SQLite engine,
		// so both engines fold case the same way; "i" keeps it case-blind regardless.
		re := bson.Regex{Pattern: regexp.QuoteMeta(strings.ToLower(q.Search)), Options: "i"}
		filter = bson.D{{Key: "$or", Value: bson.A{
			bson.D{{Key: "usernameLower", Value: re}},
			bson.D{{Key: "emailLower", Value: re}},
		}}}
	}

	total, err := s.accounts.CountDocuments(ctx, filter)
	if err != nil {
		return nil, 0, wrap("list accounts: count", err)
	}
	cur, err := s.accounts.Find(ctx, filter, options.Find().
		SetSort(bson.D{{Key: "createdAt", Value: 1}, {Key: "_id", Value: 1}}).
		SetSkip(int64(page.Offset)).
		SetLimit(int64(page.Limit)))
	if err != nil {
		return nil, 0, wrap("list accounts", err)
	}
	var docs []accountDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, 0, wrap("list accounts", err)
	}
	out := make([]storage.Account, len(docs))
	for i, d := range docs {
		out[i] = d.account()
	}
	return out, int(total), nil
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
	if _, err := s.tokens.InsertOne(ctx, doc); err != nil {
		return wrap("create account token", err)
	}
	// The account is checked after the insert, not before: DeleteAccount removes the
	// account and then its tokens, so either this check sees the account gone, or the
	// account was still there when the token was written and DeleteAccount's sweep removes
	// it. Checking first would leave a window for an orphan token.
	n, err := s.accounts.CountDocuments(ctx, bson.D{{Key: "_id", Value: t.AccountID}}, options.Count().SetLimit(1))
	if err != nil {
		return wrap("create account token: check account", err)
	}
	if n == 0 {
		if _, err := s.tokens.DeleteOne(context.WithoutCancel(ctx), bson.D{{Key: "_id", Value: t.Hash}}); err != nil {
			return wrap("create account token: remove orphan", err)
		}
		return wrap("create account token: account "+t.AccountID, mongo.ErrNoDocuments)
	}
	return nil
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
	if err := s.tokens.FindOne(ctx, filter).Decode(&d); err != nil {
		return storage.AccountToken{}, wrap("consume account token", err)
	}
	res, err := s.tokens.DeleteOne(ctx, filter)
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
	if _, err := s.tokens.DeleteMany(ctx, bson.D{{Key: "accountId", Value: accountID}, {Key: "purpose", Value: purpose}}); err != nil {
		return wrap("delete account tokens", err)
	}
	return nil
}
