package accounts

import (
	"context"
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"math/big"
	"strings"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/secrets"
	"github.com/keyward/keyward/storage"
)

// RecoveryCodeCount is how many one-time recovery codes an owner gets at a time.
const RecoveryCodeCount = 10

// recoveryAlphabet spells codes without look-alike characters (no 0/o, 1/l/i).
const recoveryAlphabet = "abcdefghjkmnpqrstuvwxyz23456789"

// newRecoveryCodes makes RecoveryCodeCount codes of ten characters ("xxxxx-xxxxx", about
// 49 bits each) and their SHA-256 hashes, the only form stored.
func newRecoveryCodes() (codes, hashes []string) {
	for range RecoveryCodeCount {
		raw := randomFrom(recoveryAlphabet, 10)
		code := raw[:5] + "-" + raw[5:]
		codes = append(codes, code)
		hashes = append(hashes, secrets.Hash(raw))
	}
	return codes, hashes
}

// normalizeRecoveryCode forgives case, spaces and the dash.
func normalizeRecoveryCode(code string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == '-' || r == ' ':
			return -1
		case r >= 'A' && r <= 'Z':
			return r + ('a' - 'A')
		}
		return r
	}, code)
}

// matchRecoveryCode compares the code's hash with every stored hash in constant time (no
// early exit, so the time says nothing about which or whether one matched).
func matchRecoveryCode(stored []string, code string) (string, bool) {
	h := []byte(secrets.Hash(normalizeRecoveryCode(code)))
	var match string
	found := 0
	for _, s := range stored {
		eq := subtle.ConstantTimeCompare(h, []byte(s))
		found |= eq
		if eq == 1 {
			match = s
		}
	}
	return match, found == 1
}

var errBadRecoveryCode = core.E(core.CodeUnauthorized, "invalid credentials")

// useRecoveryCode spends one of the account's codes; a code works once.
func (s *Service) useRecoveryCode(ctx context.Context, accountID, code string) error {
	if len(code) > 32 {
		return errBadRecoveryCode
	}
	stored, err := s.store.RecoveryCodeHashes(ctx, accountID)
	if err != nil {
		return fmt.Errorf("accounts: recovery codes: %w", err)
	}
	hash, ok := matchRecoveryCode(stored, code)
	if !ok {
		return errBadRecoveryCode
	}
	if err := s.store.UseRecoveryCode(ctx, accountID, hash); errors.Is(err, storage.ErrNotFound) {
		return errBadRecoveryCode
	} else if err != nil {
		return fmt.Errorf("accounts: use recovery code: %w", err)
	}
	s.log.Warn("recovery code used", "accountId", accountID, "left", len(stored)-1)
	return nil
}

// EnsureRecoveryCodes makes the first codes of an account that has none (when 2FA is first
// enabled) and answers them; nil when the account has codes already.
func (s *Service) EnsureRecoveryCodes(ctx context.Context, p Principal) ([]string, error) {
	stored, err := s.store.RecoveryCodeHashes(ctx, p.Account.ID)
	if err != nil {
		return nil, fmt.Errorf("accounts: recovery codes: %w", err)
	}
	if len(stored) > 0 {
		return nil, nil
	}
	return s.replaceRecoveryCodes(ctx, p.Account.ID)
}

// RegenerateRecoveryCodes replaces every code with ten new ones, shown only in this answer.
func (s *Service) RegenerateRecoveryCodes(ctx context.Context, p Principal) ([]string, error) {
	if err := requireJWT(p, "make recovery codes"); err != nil {
		return nil, err
	}
	if !p.Account.TwoFactorEnabled {
		// An account with passkeys has codes too (made with its first passkey).
		keys, err := s.store.ListPasskeys(ctx, p.Account.ID)
		if err != nil {
			return nil, fmt.Errorf("accounts: recovery codes: %w", err)
		}
		if len(keys) == 0 {
			return nil, core.E(core.CodeConflict, "turn on two-factor authentication or add a passkey first: recovery codes stand in for them")
		}
	}
	return s.replaceRecoveryCodes(ctx, p.Account.ID)
}

func (s *Service) replaceRecoveryCodes(ctx context.Context, accountID string) ([]string, error) {
	codes, hashes := newRecoveryCodes()
	if err := s.store.ReplaceRecoveryCodes(ctx, accountID, hashes, s.now()); err != nil {
		return nil, fmt.Errorf("accounts: recovery codes: %w", err)
	}
	s.log.Info("recovery codes made", "accountId", accountID, "count", len(codes))
	return codes, nil
}

// RecoveryCodesLeft answers how many unused codes the account has.
func (s *Service) RecoveryCodesLeft(ctx context.Context, p Principal) (int, error) {
	stored, err := s.store.RecoveryCodeHashes(ctx, p.Account.ID)
	if err != nil {
		return 0, fmt.Errorf("accounts: recovery codes: %w", err)
	}
	return len(stored), nil
}

// randomFrom draws n characters of alphabet uniformly from crypto/rand.
func randomFrom(alphabet string, n int) string {
	b := make([]byte, n)
	max := big.NewInt(int64(len(alphabet)))
	for i := range b {
		v, err := rand.Int(rand.Reader, max)
		if err != nil {
			panic("accounts: crypto/rand failed: " + err.Error()) // the platform's randomness is gone
		}
		b[i] = alphabet[v.Int64()]
	}
	return string(b)
}
