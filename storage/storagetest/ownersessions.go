package storagetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

var ownerSessionTests = []subtest{
	{"OwnerSessionRoundTrip", testOwnerSessionRoundTrip},
	{"OwnerSessionUpdate", testOwnerSessionUpdate},
	{"OwnerSessionListAndDelete", testOwnerSessionListAndDelete},
	{"OwnerSessionPurge", testOwnerSessionPurge},
	{"OwnerSessionDeletedWithAccount", testOwnerSessionDeletedWithAccount},
}

func newOwnerSession(accountID string) storage.OwnerSession {
	return storage.OwnerSession{
		ID: uniq("osess-"), AccountID: accountID, RefreshHash: fmt.Sprintf("%064x", seq.Add(1)),
		UserAgent: "Mozilla/5.0 (X11; Linux x86_64) Chrome/131.0", IP: "203.0.113.7",
		CreatedAt: ms(0), LastUsedAt: ms(time.Second), AuthAt: ms(0), ExpiresAt: ms(24 * time.Hour),
	}
}

func mustCreateOwnerSession(t *testing.T, s storage.Store, o storage.OwnerSession) storage.OwnerSession {
	t.Helper()
	if err := s.CreateOwnerSession(t.Context(), o); err != nil {
		t.Fatalf("CreateOwnerSession: %v", err)
	}
	return o
}

func wantOwnerSession(t *testing.T, s storage.Store, want storage.OwnerSession) {
	t.Helper()
	got, err := s.GetOwnerSession(t.Context(), want.ID)
	if err != nil {
		t.Fatalf("GetOwnerSession(%s): %v", want.ID, err)
	}
	if d := diffOwnerSession(want, got); d != "" {
		t.Fatalf("GetOwnerSession(%s): %s", want.ID, d)
	}
}

func diffOwnerSession(want, got storage.OwnerSession) string {
	if want.ID != got.ID || want.AccountID != got.AccountID || want.RefreshHash != got.RefreshHash ||
		want.UserAgent != got.UserAgent || want.IP != got.IP || !want.CreatedAt.Equal(got.CreatedAt) ||
		!want.LastUsedAt.Equal(got.LastUsedAt) || !want.AuthAt.Equal(got.AuthAt) || !want.ExpiresAt.Equal(got.ExpiresAt) {
		return fmt.Sprintf("got %+v, want %+v", got, want)
	}
	return ""
}

func wantOwnerSessionGone(t *testing.T, s storage.Store, id, when string) {
	t.Helper()
	if _, err := s.GetOwnerSession(t.Context(), id); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("GetOwnerSession(%s) %s: err = %v, want ErrNotFound", id, when, err)
	}
}

func testOwnerSessionRoundTrip(t *testing.T, s storage.Store) {
	a := mustCreate(t, s, fullAccount("sessions"))
	o := mustCreateOwnerSession(t, s, newOwnerSession(a.ID))
	wantOwnerSession(t, s, o)
	if err := s.CreateOwnerSession(t.Context(), o); !errors.Is(err, storage.ErrConflict) {
		t.Fatalf("CreateOwnerSession twice: err = %v, want ErrConflict", err)
	}
	wantOwnerSessionGone(t, s, uniq("osess-unknown-"), "never created")
}

func testOwnerSessionUpdate(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := mustCreate(t, s, fullAccount("sessions"))
	o := mustCreateOwnerSession(t, s, newOwnerSession(a.ID))
	// Zero members leave the stored values.
	if err := s.UpdateOwnerSession(ctx, o.ID, storage.OwnerSessionChange{LastUsedAt: ms(time.Minute), IP: "198.51.100.2"}); err != nil {
		t.Fatalf("UpdateOwnerSession: %v", err)
	}
	o.LastUsedAt, o.IP = ms(time.Minute), "198.51.100.2"
	wantOwnerSession(t, s, o)
	if err := s.UpdateOwnerSession(ctx, o.ID, storage.OwnerSessionChange{AuthAt: ms(2 * time.Minute), ExpiresAt: ms(48 * time.Hour)}); err != nil {
		t.Fatalf("UpdateOwnerSession: %v", err)
	}
	o.AuthAt, o.ExpiresAt = ms(2*time.Minute), ms(48*time.Hour)
	wantOwnerSession(t, s, o)
	err := s.UpdateOwnerSession(ctx, uniq("osess-unknown-"), storage.OwnerSessionChange{LastUsedAt: ms(time.Hour)})
	if !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("UpdateOwnerSession(unknown): err = %v, want ErrNotFound", err)
	}
}

func testOwnerSessionListAndDelete(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a := mustCreate(t, s, fullAccount("sessions"))
	b := mustCreate(t, s, fullAccount("other"))
	older := newOwnerSession(a.ID)
	newer := newOwnerSession(a.ID)
	newer.LastUsedAt = ms(time.Hour)
	expired := newOwnerSession(a.ID)
	expired.ExpiresAt = ms(10 * time.Minute)
	third := newOwnerSession(a.ID)
	third.LastUsedAt = ms(2 * time.Second)
	theirs := newOwnerSession(b.ID)
	for _, o := range []storage.OwnerSession{older, newer, expired, third, theirs} {
		mustCreateOwnerSession(t, s, o)
	}
	list, err := s.ListOwnerSessions(ctx, a.ID, ms(20*time.Minute))
	if err != nil {
		t.Fatalf("ListOwnerSessions: %v", err)
	}
	if len(list) != 3 || list[0].ID != newer.ID || list[1].ID != third.ID || list[2].ID != older.ID {
		t.Fatalf("ListOwnerSessions = %+v, want newer, third, older (the expired one left out)", list)
	}
	if d := diffOwnerSession(newer, list[0]); d != "" {
		t.Fatalf("listed session: %s", d)
	}

	// Another account's session is never deleted through this account.
	if err := s.DeleteOwnerSession(ctx, a.ID, theirs.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("DeleteOwnerSession(other account's): err = %v, want ErrNotFound", err)
	}
	wantOwnerSession(t, s, theirs)
	if err := s.DeleteOwnerSession(ctx, a.ID, third.ID); err != nil {
		t.Fatalf("DeleteOwnerSession: %v", err)
	}
	wantOwnerSessionGone(t, s, third.ID, "after DeleteOwnerSession")
	if err := s.DeleteOwnerSession(ctx, a.ID, third.ID); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("DeleteOwnerSession twice: err = %v, want ErrNotFound", err)
	}

	// All others: the kept one and the other account's stay.
	n, err := s.DeleteOwnerSessions(ctx, a.ID, newer.ID)
	if err != nil || n != 2 {
		t.Fatalf("DeleteOwnerSessions(keep newer) = %d, %v; want 2 (older and expired)", n, err)
	}
	wantOwnerSession(t, s, newer)
	wantOwnerSession(t, s, theirs)
	wantOwnerSessionGone(t, s, older.ID, "after DeleteOwnerSessions")
	if n, err := s.DeleteOwnerSessions(ctx, a.ID, ""); err != nil || n != 1 {
		t.Fatalf("DeleteOwnerSessions(keep none) = %d, %v; want 1", n, err)
	}
	wantOwnerSessionGone(t, s, newer.ID, "after DeleteOwnerSessions(keep none)")
	wantOwnerSession(t, s, theirs)
}

func testOwnerSessionPurge(t *testing.T, s storage.Store) {
	a := mustCreate(t, s, fullAccount("sessions"))
	short := newOwnerSession(a.ID)
	short.ExpiresAt = ms(time.Minute)
	long := mustCreateOwnerSession(t, s, newOwnerSession(a.ID))
	mustCreateOwnerSession(t, s, short)
	n, err := s.PurgeOwnerSessions(t.Context(), ms(time.Minute))
	if err != nil || n != 1 {
		t.Fatalf("PurgeOwnerSessions = %d, %v; want 1 (expired at or before now)", n, err)
	}
	wantOwnerSessionGone(t, s, short.ID, "after the purge")
	wantOwnerSession(t, s, long)
}

func testOwnerSessionDeletedWithAccount(t *testing.T, s storage.Store) {
	a := mustCreate(t, s, fullAccount("leaving"))
	b := mustCreate(t, s, fullAccount("staying"))
	gone := mustCreateOwnerSession(t, s, newOwnerSession(a.ID))
	kept := mustCreateOwnerSession(t, s, newOwnerSession(b.ID))
	if err := s.DeleteAccount(t.Context(), a.ID); err != nil {
		t.Fatalf("DeleteAccount: %v", err)
	}
	wantOwnerSessionGone(t, s, gone.ID, "after DeleteAccount")
	wantOwnerSession(t, s, kept)
}
