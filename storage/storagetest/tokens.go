package storagetest

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

var tokenTests = []subtest{
	{"TokenCreateConsume", testTokenCreateConsume},
	{"TokenCreateConflict", testTokenCreateConflict},
	{"TokenCreateUnknownAccount", testTokenCreateUnknownAccount},
	{"TokenExpired", testTokenExpired},
	{"TokenWrongPurpose", testTokenWrongPurpose},
	{"TokenConsumeConcurrent", testTokenConsumeConcurrent},
	{"TokenDeleteAccountTokens", testTokenDeleteAccountTokens},
	{"TokenDeletedWithAccount", testTokenDeletedWithAccount},
}

func newToken(accountID, purpose string) storage.AccountToken {
	return storage.AccountToken{
		Hash:      fmt.Sprintf("%064x", uint64(0x9e3779b97f4a7c15)^uint64(seq.Add(1))),
		AccountID: accountID,
		Purpose:   purpose,
		ExpiresAt: ms(24 * time.Hour),
		CreatedAt: ms(-time.Minute),
	}
}

func mustCreateToken(t *testing.T, s storage.Store, tok storage.AccountToken) storage.AccountToken {
	t.Helper()
	if err := s.CreateAccountToken(t.Context(), tok); err != nil {
		t.Fatalf("CreateAccountToken(%s): %v", tok.Purpose, err)
	}
	return tok
}

// wantConsume consumes tok at now and fails unless it comes back exactly.
func wantConsume(t *testing.T, s storage.Store, tok storage.AccountToken, now time.Time) {
	t.Helper()
	got, err := s.ConsumeAccountToken(t.Context(), tok.Purpose, tok.Hash, now)
	if err != nil {
		t.Fatalf("ConsumeAccountToken(%s, %s): %v", tok.Purpose, tok.Hash, err)
	}
	if d := diffToken(tok, got); d != "" {
		t.Fatalf("consumed token differs: %s", d)
	}
}

// wantGone fails unless consuming tok at now answers ErrNotFound.
func wantGone(t *testing.T, s storage.Store, tok storage.AccountToken, now time.Time, why string) {
	t.Helper()
	got, err := s.ConsumeAccountToken(t.Context(), tok.Purpose, tok.Hash, now)
	if !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("ConsumeAccountToken %s: (%+v, %v), want ErrNotFound", why, got, err)
	}
}

func testTokenCreateConsume(t *testing.T, s storage.Store) {
	a := mustCreate(t, s, fullAccount("tokens"))
	verify := mustCreateToken(t, s, newToken(a.ID, storage.TokenVerifyEmail))
	reset := mustCreateToken(t, s, newToken(a.ID, storage.TokenResetPassword))

	wantConsume(t, s, verify, base)
	wantGone(t, s, verify, base, "a second time")
	// Consuming one token leaves the account's others alone.
	wantConsume(t, s, reset, base)
	wantGone(t, s, reset, base, "a second time")
	// Tokens are not part of the account record.
	wantAccount(t, s, a)
}

func testTokenCreateConflict(t *testing.T, s storage.Store) {
	a := mustCreate(t, s, fullAccount("tokdup"))
	b := mustCreate(t, s, fullAccount("tokdup2"))
	tok := mustCreateToken(t, s, newToken(a.ID, storage.TokenVerifyEmail))

	dup := tok
	dup.AccountID, dup.Purpose, dup.ExpiresAt = b.ID, storage.TokenResetPassword, ms(48*time.Hour)
	if err := s.CreateAccountToken(t.Context(), dup); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("CreateAccountToken with an existing hash: error = %v, want ErrConflict", err)
	}
	// The refused token did not replace the first one.
	wantGone(t, s, dup, base, "of the refused duplicate")
	wantConsume(t, s, tok, base)
}

// testTokenCreateUnknownAccount: a token must belong to an existing account, so that one
// can never outlive (or predate) the account DeleteAccount clears it with.
func testTokenCreateUnknownAccount(t *testing.T, s storage.Store) {
	tok := newToken("no-such-account", storage.TokenVerifyEmail)
	if err := s.CreateAccountToken(t.Context(), tok); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("CreateAccountToken for an unknown account: error = %v, want ErrNotFound", err)
	}
	wantGone(t, s, tok, base, "of an unknown account")
}

func testTokenExpired(t *testing.T, s storage.Store) {
	a := mustCreate(t, s, fullAccount("expiry"))
	expired := mustCreateToken(t, s, newToken(a.ID, storage.TokenResetPassword))
	live := mustCreateToken(t, s, newToken(a.ID, storage.TokenResetPassword))

	// A token is valid strictly before ExpiresAt. The boundary comes first: whether an
	// engine also drops a token it refused as expired is its own business.
	wantGone(t, s, expired, expired.ExpiresAt, "at its expiry instant")
	wantGone(t, s, expired, expired.ExpiresAt.Add(time.Millisecond), "1 ms after expiry")
	wantGone(t, s, expired, expired.ExpiresAt.Add(365*24*time.Hour), "a year after expiry")
	wantConsume(t, s, live, live.ExpiresAt.Add(-time.Millisecond))
	wantGone(t, s, live, live.ExpiresAt.Add(-time.Millisecond), "a second time")
}

func testTokenWrongPurpose(t *testing.T, s storage.Store) {
	a := mustCreate(t, s, fullAccount("purpose"))
	tok := mustCreateToken(t, s, newToken(a.ID, storage.TokenVerifyEmail))

	wrong := tok
	wrong.Purpose = storage.TokenResetPassword
	wantGone(t, s, wrong, base, "with the wrong purpose")
	wrong.Purpose = ""
	wantGone(t, s, wrong, base, "with an empty purpose")
	// The failed attempts did not consume it.
	wantConsume(t, s, tok, base)
}

// testTokenConsumeConcurrent races many consumers of one token: exactly one wins.
func testTokenConsumeConcurrent(t *testing.T, s storage.Store) {
	a := mustCreate(t, s, fullAccount("racer"))
	tok := mustCreateToken(t, s, newToken(a.ID, storage.TokenResetPassword))

	const workers = 20
	var (
		wg        sync.WaitGroup
		mu        sync.Mutex
		winners   int
		notFound  int
		otherErrs []error
	)
	start := make(chan struct{})
	for range workers {
		wg.Go(func() {
			<-start
			got, err := s.ConsumeAccountToken(t.Context(), tok.Purpose, tok.Hash, base)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				winners++
				if d := diffToken(tok, got); d != "" {
					otherErrs = append(otherErrs, fmt.Errorf("winner got a token that differs: %s", d))
				}
			case errors.Is(err, storage.ErrNotFound):
				notFound++
			default:
				otherErrs = append(otherErrs, err)
			}
		})
	}
	close(start)
	wg.Wait()
	for _, err := range otherErrs {
		t.Error(err)
	}
	if winners != 1 || notFound != workers-1 {
		t.Errorf("%d concurrent consumers: %d succeeded, %d got ErrNotFound; want 1 and %d",
			workers, winners, notFound, workers-1)
	}
}

func testTokenDeleteAccountTokens(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := mustCreate(t, s, fullAccount("owner"))
	b := mustCreate(t, s, fullAccount("neighbour"))
	aVerify1 := mustCreateToken(t, s, newToken(a.ID, storage.TokenVerifyEmail))
	aVerify2 := mustCreateToken(t, s, newToken(a.ID, storage.TokenVerifyEmail))
	aReset := mustCreateToken(t, s, newToken(a.ID, storage.TokenResetPassword))
	bVerify := mustCreateToken(t, s, newToken(b.ID, storage.TokenVerifyEmail))

	if err := s.DeleteAccountTokens(ctx, a.ID, storage.TokenVerifyEmail); err != nil {
		t.Fatalf("DeleteAccountTokens: %v", err)
	}
	wantGone(t, s, aVerify1, base, "after DeleteAccountTokens")
	wantGone(t, s, aVerify2, base, "after DeleteAccountTokens")
	// Other purposes and other accounts keep theirs.
	wantConsume(t, s, aReset, base)
	wantConsume(t, s, bVerify, base)
	wantAccount(t, s, a)

	// Deleting when there is nothing to delete is not an error.
	if err := s.DeleteAccountTokens(ctx, a.ID, storage.TokenVerifyEmail); err != nil {
		t.Errorf("DeleteAccountTokens with no tokens left: %v", err)
	}
	if err := s.DeleteAccountTokens(ctx, "no-such-account", storage.TokenResetPassword); err != nil {
		t.Errorf("DeleteAccountTokens of an unknown account: %v", err)
	}
}

func testTokenDeletedWithAccount(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := mustCreate(t, s, fullAccount("leaving"))
	b := mustCreate(t, s, fullAccount("staying"))
	aVerify := mustCreateToken(t, s, newToken(a.ID, storage.TokenVerifyEmail))
	aReset := mustCreateToken(t, s, newToken(a.ID, storage.TokenResetPassword))
	bReset := mustCreateToken(t, s, newToken(b.ID, storage.TokenResetPassword))

	if err := s.DeleteAccount(ctx, a.ID); err != nil {
		t.Fatalf("DeleteAccount: %v", err)
	}
	wantGone(t, s, aVerify, base, "after DeleteAccount")
	wantGone(t, s, aReset, base, "after DeleteAccount")

	// An account created again under the same id does not inherit the old tokens.
	mustCreate(t, s, a)
	wantGone(t, s, aVerify, base, "after the account was recreated")
	wantGone(t, s, aReset, base, "after the account was recreated")

	wantConsume(t, s, bReset, base)
}
