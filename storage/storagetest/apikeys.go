package storagetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

var apiKeyTests = []subtest{
	{"APIKeyRoundTrip", testAPIKeyRoundTrip},
	{"APIKeyConflictAndUnknownAccount", testAPIKeyConflict},
	{"APIKeyUpdateTouchDelete", testAPIKeyUpdateTouchDelete},
	{"APIKeyDeletedWithAccount", testAPIKeyDeletedWithAccount},
}

// apiKeyOf returns a key of the account with every member set.
func apiKeyOf(accountID string) storage.APIKey {
	n := seq.Add(1)
	return storage.APIKey{
		ID: fmt.Sprintf("key-%d", n), AccountID: accountID, Name: fmt.Sprintf("shop %d", n),
		Hash: fmt.Sprintf("%064x", n), Prefix: "kws_abcd", Last4: fmt.Sprintf("%04d", n%10000),
		Scopes: []string{"licenses:create", "users:read"}, Apps: []string{"app-1", "app-2"},
		ExpiresAt: ms(24 * time.Hour), LastUsedAt: ms(-time.Minute), LastUsedIP: "203.0.113.9",
		CreatedAt: ms(-time.Hour), UpdatedAt: ms(-30 * time.Minute),
	}
}

func apiKeyAccount(t *testing.T, s storage.Store) storage.Account {
	t.Helper()
	a := fullAccount(uniq("keys"))
	if err := s.CreateAccount(t.Context(), a); err != nil {
		t.Fatalf("CreateAccount: %v", err)
	}
	return a
}

func testAPIKeyRoundTrip(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := apiKeyAccount(t, s)
	full := apiKeyOf(a.ID)
	bare := storage.APIKey{ID: uniq("bare-"), AccountID: a.ID, Name: "bare", Hash: uniq("hash-"), CreatedAt: ms(0)}
	for _, k := range []storage.APIKey{full, bare} {
		if err := s.CreateAPIKey(ctx, k); err != nil {
			t.Fatalf("CreateAPIKey: %v", err)
		}
	}
	for _, k := range []storage.APIKey{full, bare} {
		got, err := s.GetAPIKeyByHash(ctx, k.Hash)
		if err != nil {
			t.Fatalf("GetAPIKeyByHash: %v", err)
		}
		if d := diff(k, got); d != "" {
			t.Errorf("by hash: %s", d)
		}
		got, err = s.GetAPIKey(ctx, a.ID, k.ID)
		if err != nil {
			t.Fatalf("GetAPIKey: %v", err)
		}
		if d := diff(k, got); d != "" {
			t.Errorf("by id: %s", d)
		}
	}
	if _, err := s.GetAPIKeyByHash(ctx, ""); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("empty hash: %v, want ErrNotFound", err)
	}
	if _, err := s.GetAPIKey(ctx, "other-account", full.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("another account's key: %v, want ErrNotFound", err)
	}
	list, err := s.ListAPIKeys(ctx, a.ID)
	if err != nil {
		t.Fatalf("ListAPIKeys: %v", err)
	}
	// Oldest first: full was created an hour before bare.
	if len(list) != 2 || list[0].ID != full.ID || list[1].ID != bare.ID {
		t.Fatalf("list = %+v", list)
	}
	if list, err := s.ListAPIKeys(ctx, "nobody"); err != nil || len(list) != 0 {
		t.Errorf("list of nobody = %v, %v", list, err)
	}
}

func testAPIKeyConflict(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := apiKeyAccount(t, s)
	k := apiKeyOf(a.ID)
	if err := s.CreateAPIKey(ctx, k); err != nil {
		t.Fatalf("CreateAPIKey: %v", err)
	}
	sameHash := apiKeyOf(a.ID)
	sameHash.Hash = k.Hash
	if err := s.CreateAPIKey(ctx, sameHash); !errors.Is(err, storage.ErrConflict) {
		t.Errorf("same hash: %v, want ErrConflict", err)
	}
	sameID := apiKeyOf(a.ID)
	sameID.ID = k.ID
	if err := s.CreateAPIKey(ctx, sameID); !errors.Is(err, storage.ErrConflict) {
		t.Errorf("same id: %v, want ErrConflict", err)
	}
	orphan := apiKeyOf("no-such-account")
	if err := s.CreateAPIKey(ctx, orphan); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("unknown account: %v, want ErrNotFound", err)
	}
	if _, err := s.GetAPIKeyByHash(ctx, orphan.Hash); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("the refused key was stored: %v", err)
	}
}

func testAPIKeyUpdateTouchDelete(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := apiKeyAccount(t, s)
	k := apiKeyOf(a.ID)
	if err := s.CreateAPIKey(ctx, k); err != nil {
		t.Fatalf("CreateAPIKey: %v", err)
	}
	change := k
	change.Name, change.Scopes, change.Apps, change.ExpiresAt, change.UpdatedAt = "renamed", []string{"read"}, nil, time.Time{}, ms(time.Minute)
	// Members UpdateAPIKey does not write must be kept whatever the argument holds.
	change.Hash, change.LastUsedIP, change.CreatedAt = "ignored", "ignored", ms(time.Hour)
	got, err := s.UpdateAPIKey(ctx, change)
	if err != nil {
		t.Fatalf("UpdateAPIKey: %v", err)
	}
	want := k
	want.Name, want.Scopes, want.Apps, want.ExpiresAt, want.UpdatedAt = "renamed", []string{"read"}, nil, time.Time{}, ms(time.Minute)
	if d := diff(want, got); d != "" {
		t.Errorf("updated: %s", d)
	}
	// And an expiry set again.
	change.ExpiresAt = ms(48 * time.Hour)
	if got, err = s.UpdateAPIKey(ctx, change); err != nil || !got.ExpiresAt.Equal(ms(48*time.Hour)) {
		t.Errorf("expiry set again: %v %v", got.ExpiresAt, err)
	}
	other := change
	other.AccountID = "other-account"
	if _, err := s.UpdateAPIKey(ctx, other); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("update by another account: %v, want ErrNotFound", err)
	}

	if err := s.TouchAPIKey(ctx, k.ID, ms(2*time.Hour), "198.51.100.7"); err != nil {
		t.Fatalf("TouchAPIKey: %v", err)
	}
	got, err = s.GetAPIKeyByHash(ctx, k.Hash)
	if err != nil || !got.LastUsedAt.Equal(ms(2*time.Hour)) || got.LastUsedIP != "198.51.100.7" {
		t.Errorf("touched = %v %q, %v", got.LastUsedAt, got.LastUsedIP, err)
	}
	if err := s.TouchAPIKey(ctx, "gone", ms(0), "x"); err != nil {
		t.Errorf("touch of a missing key: %v", err)
	}

	if err := s.DeleteAPIKey(ctx, "other-account", k.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("delete by another account: %v, want ErrNotFound", err)
	}
	if err := s.DeleteAPIKey(ctx, a.ID, k.ID); err != nil {
		t.Fatalf("DeleteAPIKey: %v", err)
	}
	if _, err := s.GetAPIKeyByHash(ctx, k.Hash); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("deleted key still found: %v", err)
	}
	if err := s.DeleteAPIKey(ctx, a.ID, k.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("second delete: %v, want ErrNotFound", err)
	}
}

func testAPIKeyDeletedWithAccount(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := apiKeyAccount(t, s)
	k := apiKeyOf(a.ID)
	if err := s.CreateAPIKey(ctx, k); err != nil {
		t.Fatalf("CreateAPIKey: %v", err)
	}
	if err := s.DeleteAccount(ctx, a.ID); err != nil {
		t.Fatalf("DeleteAccount: %v", err)
	}
	if _, err := s.GetAPIKeyByHash(ctx, k.Hash); !errors.Is(err, storage.ErrNotFound) {
		t.Errorf("key outlived its account: %v", err)
	}
}
