package storagetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

var passkeyTests = []subtest{
	{"PasskeysCreateListUseDelete", testPasskeysCreateListUseDelete},
	{"PasskeysDeletedWithAccount", testPasskeysDeletedWithAccount},
	{"PasskeyChallengeUsedOnce", testPasskeyChallengeUsedOnce},
}

func newPasskey(accountID string) storage.Passkey {
	n := seq.Add(1)
	return storage.Passkey{ID: uniq("pk_"), AccountID: accountID, Name: fmt.Sprintf("key %d", n),
		CredentialID: []byte{0, 1, byte(n), byte(n >> 8), 0xff}, Credential: []byte(fmt.Sprintf(`{"n":%d}`, n)),
		CreatedAt: ms(time.Duration(n) * time.Millisecond)}
}

func testPasskeysCreateListUseDelete(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := mustCreate(t, s, fullAccount("passkeys"))
	b := mustCreate(t, s, fullAccount("other"))
	p1, p2, theirs := newPasskey(a.ID), newPasskey(a.ID), newPasskey(b.ID)
	for _, p := range []storage.Passkey{p1, p2, theirs} {
		if err := s.CreatePasskey(ctx, p); err != nil {
			t.Fatalf("CreatePasskey: %v", err)
		}
	}
	dup := newPasskey(b.ID)
	dup.CredentialID = p1.CredentialID
	if err := s.CreatePasskey(ctx, dup); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("CreatePasskey with a stored credential id: %v, want ErrConflict", err)
	}
	list, err := s.ListPasskeys(ctx, a.ID)
	if err != nil {
		t.Fatalf("ListPasskeys: %v", err)
	}
	if fmt.Sprint(list) != fmt.Sprint([]storage.Passkey{p1, p2}) {
		t.Fatalf("ListPasskeys = %+v, want %+v", list, []storage.Passkey{p1, p2})
	}
	got, err := s.GetPasskeyByCredentialID(ctx, p2.CredentialID)
	if err != nil || fmt.Sprint(got) != fmt.Sprint(p2) {
		t.Fatalf("GetPasskeyByCredentialID = %+v, %v; want %+v", got, err, p2)
	}
	if _, err := s.GetPasskeyByCredentialID(ctx, []byte("nope")); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("GetPasskeyByCredentialID(unknown): %v, want ErrNotFound", err)
	}
	if err := s.UsePasskey(ctx, p2.ID, []byte(`{"count":7}`), ms(time.Hour)); err != nil {
		t.Fatalf("UsePasskey: %v", err)
	}
	if err := s.RenamePasskey(ctx, a.ID, p2.ID, "laptop"); err != nil {
		t.Fatalf("RenamePasskey: %v", err)
	}
	got, _ = s.GetPasskeyByCredentialID(ctx, p2.CredentialID)
	if string(got.Credential) != `{"count":7}` || !got.LastUsedAt.Equal(ms(time.Hour)) || got.Name != "laptop" {
		t.Fatalf("after use and rename: %+v", got)
	}
	// Another account's passkey is out of reach.
	if err := s.RenamePasskey(ctx, a.ID, theirs.ID, "x"); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("RenamePasskey(other account's): %v, want ErrNotFound", err)
	}
	if err := s.DeletePasskey(ctx, a.ID, theirs.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("DeletePasskey(other account's): %v, want ErrNotFound", err)
	}
	if err := s.DeletePasskey(ctx, a.ID, p1.ID); err != nil {
		t.Fatalf("DeletePasskey: %v", err)
	}
	if err := s.DeletePasskey(ctx, a.ID, p1.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("DeletePasskey twice: %v, want ErrNotFound", err)
	}
	if err := s.UsePasskey(ctx, p1.ID, []byte("{}"), ms(0)); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("UsePasskey(deleted): %v, want ErrNotFound", err)
	}
	if list, _ := s.ListPasskeys(ctx, a.ID); len(list) != 1 || list[0].ID != p2.ID {
		t.Fatalf("ListPasskeys after delete = %+v", list)
	}
}

func testPasskeysDeletedWithAccount(t *testing.T, s storage.Store) {
	a := mustCreate(t, s, fullAccount("leaving"))
	p := newPasskey(a.ID)
	if err := s.CreatePasskey(t.Context(), p); err != nil {
		t.Fatalf("CreatePasskey: %v", err)
	}
	if err := s.DeleteAccount(t.Context(), a.ID); err != nil {
		t.Fatalf("DeleteAccount: %v", err)
	}
	if _, err := s.GetPasskeyByCredentialID(t.Context(), p.CredentialID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("a deleted account's passkey: %v, want ErrNotFound", err)
	}
}

func testPasskeyChallengeUsedOnce(t *testing.T, s storage.Store) {
	ctx := t.Context()
	c := storage.WebAuthnChallenge{ID: uniq("ch_"), AccountID: "acc", Purpose: "login", Data: []byte(`{"challenge":"x"}`),
		ExpiresAt: ms(5 * time.Minute), CreatedAt: ms(0)}
	if err := s.SaveWebAuthnChallenge(ctx, c); err != nil {
		t.Fatalf("SaveWebAuthnChallenge: %v", err)
	}
	if _, err := s.ConsumeWebAuthnChallenge(ctx, c.ID, "register", ms(time.Second)); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Consume for another purpose: %v, want ErrNotFound", err)
	}
	if _, err := s.ConsumeWebAuthnChallenge(ctx, c.ID, "login", ms(5*time.Minute)); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("Consume at its expiry: %v, want ErrNotFound", err)
	}
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := s.ConsumeWebAuthnChallenge(ctx, c.ID, "login", ms(time.Second))
			if err == nil {
				wins.Add(1)
				if fmt.Sprint(got) != fmt.Sprint(c) {
					t.Errorf("ConsumeWebAuthnChallenge = %+v, want %+v", got, c)
				}
			} else if !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("ConsumeWebAuthnChallenge: %v", err)
			}
		}()
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Fatalf("%d of 6 concurrent consumers won, want 1", wins.Load())
	}
	// Saving a new challenge drops the expired ones.
	old := storage.WebAuthnChallenge{ID: uniq("ch_"), Purpose: "login", Data: []byte("{}"), ExpiresAt: ms(time.Minute), CreatedAt: ms(0)}
	if err := s.SaveWebAuthnChallenge(ctx, old); err != nil {
		t.Fatalf("SaveWebAuthnChallenge: %v", err)
	}
	if err := s.SaveWebAuthnChallenge(ctx, storage.WebAuthnChallenge{ID: uniq("ch_"), Purpose: "login", Data: []byte("{}"),
		ExpiresAt: ms(time.Hour), CreatedAt: ms(2 * time.Minute)}); err != nil {
		t.Fatalf("SaveWebAuthnChallenge: %v", err)
	}
	if _, err := s.ConsumeWebAuthnChallenge(ctx, old.ID, "login", ms(0)); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("an expired challenge after a later save: %v, want ErrNotFound", err)
	}
}
