package storage

import (
	"context"
	"time"
)

// RecoveryCodeStore keeps the SHA-256 hashes (hex) of an owner's one-time recovery codes
// (issue 25): each works once in place of a second factor.
type RecoveryCodeStore interface {
	// ReplaceRecoveryCodes drops the account's codes and stores these hashes.
	ReplaceRecoveryCodes(ctx context.Context, accountID string, hashes []string, now time.Time) error
	// RecoveryCodeHashes answers the hashes of the account's unused codes.
	RecoveryCodeHashes(ctx context.Context, accountID string) ([]string, error)
	// UseRecoveryCode deletes one code; of concurrent users of one code exactly one
	// succeeds, the others (and any caller of an unknown code) get ErrNotFound.
	UseRecoveryCode(ctx context.Context, accountID, hash string) error
}
