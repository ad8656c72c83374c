package storagetest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

// testGetUserStandings: GetUserStandings answers, for one id and for many, the standing
// GetUser's record has (banned with its reason, disabled, expiring or not), and leaves out
// unknown ids and users of another app.
func testGetUserStandings(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "app"))
	other := mustCreateApp(t, s, fullApp("acc-1", "other"))
	banned := fullUser(app.ID, "banned") // banned, with a reason and an expiry
	free := fullUser(app.ID, "free")
	free.Banned, free.BanReason, free.ExpiresAt = false, "", time.Time{}
	disabled := fullUser(app.ID, "disabled")
	disabled.Banned, disabled.Enabled, disabled.ExpiresAt = false, false, ms(-time.Hour)
	var ids []string
	for _, u := range []storage.AppUser{banned, free, disabled} {
		ids = append(ids, mustCreateUser(t, s, u).ID)
	}
	stranger := mustCreateUser(t, s, fullUser(other.ID, "stranger"))

	for _, id := range ids {
		want, err := s.GetUser(ctx, app.ID, id)
		if err != nil {
			t.Fatal(err)
		}
		got, err := s.GetUserStandings(ctx, app.ID, []string{id})
		if err != nil {
			t.Fatalf("GetUserStandings(%s): %v", want.Username, err)
		}
		if len(got) != 1 {
			t.Fatalf("GetUserStandings(%s) = %d standings, want 1", want.Username, len(got))
		}
		if d := diff(want.Standing(), got[0]); d != "" {
			t.Fatalf("GetUserStandings(%s) differs from GetUser's: %s", want.Username, d)
		}
	}
	all, err := s.GetUserStandings(ctx, app.ID, append([]string{"missing", stranger.ID}, ids...))
	if err != nil {
		t.Fatalf("GetUserStandings(many): %v", err)
	}
	if len(all) != len(ids) {
		t.Fatalf("GetUserStandings(many) = %d standings, want %d (no unknown id, no other app's user)", len(all), len(ids))
	}
	for _, id := range ids {
		want, _ := s.GetUser(ctx, app.ID, id)
		i := slices.IndexFunc(all, func(u storage.UserStanding) bool { return u.ID == id })
		if i < 0 {
			t.Fatalf("GetUserStandings(many) lacks %s", want.Username)
		}
		if d := diff(want.Standing(), all[i]); d != "" {
			t.Fatalf("GetUserStandings(many) differs for %s: %s", want.Username, d)
		}
	}
	for _, q := range [][]string{nil, {"missing"}, {stranger.ID}} {
		if got, err := s.GetUserStandings(ctx, app.ID, q); err != nil || len(got) != 0 {
			t.Fatalf("GetUserStandings(%v) = %v, %v; want none", q, got, err)
		}
	}
}

// BenchUserStanding times a socket admission's user read: the whole record (GetUser) and
// its standing alone (GetUserStandings with one id).
func BenchUserStanding(b *testing.B, newStore func(b *testing.B) storage.Store) {
	s := newStore(b)
	ctx := b.Context()
	app := fullApp("acc-1", "app")
	if err := s.CreateApp(ctx, app); err != nil {
		b.Fatal(err)
	}
	var ids []string
	for i := range 1000 {
		u := fullUser(app.ID, fmt.Sprintf("user%d", i))
		if err := s.CreateUser(ctx, u); err != nil {
			b.Fatal(err)
		}
		ids = append(ids, u.ID)
	}
	b.Run("GetUser", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := s.GetUser(ctx, app.ID, ids[i%len(ids)]); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("GetUserStandings", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if got, err := s.GetUserStandings(ctx, app.ID, ids[i%len(ids):i%len(ids)+1]); err != nil || len(got) != 1 {
				b.Fatal(got, err)
			}
		}
	})
}
