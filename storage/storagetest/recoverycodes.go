package storagetest

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

var recoveryCodeTests = []subtest{
	{"RecoveryCodesReplaceAndUse", testRecoveryCodesReplaceAndUse},
	{"RecoveryCodeUsedOnceConcurrently", testRecoveryCodeUsedOnceConcurrently},
	{"RecoveryCodesDeletedWithAccount", testRecoveryCodesDeletedWithAccount},
}

func codeHashes(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%064x", uint64(seq.Add(1))*0x9e3779b97f4a7c15)
	}
	slices.Sort(out)
	return out
}

func wantCodes(t *testing.T, s storage.Store, accountID string, want []string) {
	t.Helper()
	got, err := s.RecoveryCodeHashes(t.Context(), accountID)
	if err != nil {
		t.Fatalf("RecoveryCodeHashes: %v", err)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("RecoveryCodeHashes = %v, want %v", got, want)
	}
}

func testRecoveryCodesReplaceAndUse(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := mustCreate(t, s, fullAccount("codes"))
	b := mustCreate(t, s, fullAccount("other"))
	wantCodes(t, s, a.ID, nil)
	first := codeHashes(10)
	if err := s.ReplaceRecoveryCodes(ctx, a.ID, first, ms(0)); err != nil {
		t.Fatalf("ReplaceRecoveryCodes: %v", err)
	}
	theirs := codeHashes(2)
	if err := s.ReplaceRecoveryCodes(ctx, b.ID, theirs, ms(0)); err != nil {
		t.Fatalf("ReplaceRecoveryCodes: %v", err)
	}
	wantCodes(t, s, a.ID, first)
	if err := s.UseRecoveryCode(ctx, a.ID, first[3]); err != nil {
		t.Fatalf("UseRecoveryCode: %v", err)
	}
	if err := s.UseRecoveryCode(ctx, a.ID, first[3]); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("UseRecoveryCode twice: err = %v, want ErrNotFound", err)
	}
	// Another account's code is not this account's.
	if err := s.UseRecoveryCode(ctx, a.ID, theirs[0]); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("UseRecoveryCode(other account's): err = %v, want ErrNotFound", err)
	}
	wantCodes(t, s, a.ID, slices.Delete(slices.Clone(first), 3, 4))
	second := codeHashes(10)
	if err := s.ReplaceRecoveryCodes(ctx, a.ID, second, ms(time.Hour)); err != nil {
		t.Fatalf("ReplaceRecoveryCodes again: %v", err)
	}
	wantCodes(t, s, a.ID, second)
	if err := s.UseRecoveryCode(ctx, a.ID, first[0]); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("an old code after the replacement: err = %v, want ErrNotFound", err)
	}
	wantCodes(t, s, b.ID, theirs)
}

func testRecoveryCodeUsedOnceConcurrently(t *testing.T, s storage.Store) {
	a := mustCreate(t, s, fullAccount("codes"))
	codes := codeHashes(3)
	if err := s.ReplaceRecoveryCodes(t.Context(), a.ID, codes, ms(0)); err != nil {
		t.Fatalf("ReplaceRecoveryCodes: %v", err)
	}
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := s.UseRecoveryCode(t.Context(), a.ID, codes[1]); err == nil {
				wins.Add(1)
			} else if !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("UseRecoveryCode: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d of 8 concurrent uses of one code succeeded, want 1", wins.Load())
	}
}

func testRecoveryCodesDeletedWithAccount(t *testing.T, s storage.Store) {
	a := mustCreate(t, s, fullAccount("leaving"))
	if err := s.ReplaceRecoveryCodes(t.Context(), a.ID, codeHashes(4), ms(0)); err != nil {
		t.Fatalf("ReplaceRecoveryCodes: %v", err)
	}
	if err := s.DeleteAccount(t.Context(), a.ID); err != nil {
		t.Fatalf("DeleteAccount: %v", err)
	}
	mustCreate(t, s, a)
	wantCodes(t, s, a.ID, nil)
}
