package storagetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

var clientSessionTests = []subtest{
	{"ClientSessionRoundTrip", testClientSessionRoundTrip},
	{"ClientSessionTimePrecision", testClientSessionTimePrecision},
	{"ClientSessionUpsertReplaces", testClientSessionUpsertReplaces},
	{"ClientSessionBatch", testClientSessionBatch},
	{"ClientSessionConcurrentSave", testClientSessionConcurrentSave},
	{"ClientSessionDelete", testClientSessionDelete},
	{"ClientSessionDeleteUser", testClientSessionDeleteUser},
	{"ClientSessionDeleteExpired", testClientSessionDeleteExpired},
	{"ClientSessionDeletedWithApp", testClientSessionDeletedWithApp},
	{"ClientSessionExtendOnlyNeverCreates", testClientSessionExtendOnlyNeverCreates},
}

// fullSession returns a session copy with every field set to a distinct non-zero value.
func fullSession(appID, userID string) storage.ClientSession {
	n := seq.Add(1)
	return storage.ClientSession{
		TokenHash: fmt.Sprintf("%064x", 0x5e55000+n),
		AppID:     appID,
		AccountID: fmt.Sprintf("acc-of-%d", n),
		UserID:    userID,
		Username:  fmt.Sprintf("User-%d", n),
		HWID:      fmt.Sprintf("HWID-%d", n),
		IP:        "203.0.113.21",
		Country:   "NL",
		Version:   fmt.Sprintf("2.%d.1", n),
		CreatedAt: ms(-3*time.Hour + 1*time.Millisecond),
		LoginAt:   ms(-2*time.Hour + 2*time.Millisecond),
		ExpiresAt: ms(time.Hour + 3*time.Millisecond),
	}
}

// minimalSession returns a session copy of an init without login: only the token hash
// and the app, every other field (times included) zero.
func minimalSession(appID string) storage.ClientSession {
	return storage.ClientSession{TokenHash: fmt.Sprintf("%064x", 0x5e55000+seq.Add(1)), AppID: appID}
}

func mustSaveSessions(t *testing.T, s storage.Store, ss ...storage.ClientSession) {
	t.Helper()
	if err := s.SaveClientSessions(t.Context(), ss); err != nil {
		t.Fatalf("SaveClientSessions(%d sessions): %v", len(ss), err)
	}
}

// wantSession reads want's token hash back and fails unless it equals want.
func wantSession(t *testing.T, s storage.Store, want storage.ClientSession) {
	t.Helper()
	got, err := s.GetClientSession(t.Context(), want.TokenHash)
	if err != nil {
		t.Fatalf("GetClientSession(%s): %v", want.TokenHash, err)
	}
	if d := diff(want, got); d != "" {
		t.Fatalf("GetClientSession(%s) differs: %s", want.TokenHash, d)
	}
}

// wantSessions checks every session of want is stored as it is.
func wantSessions(t *testing.T, s storage.Store, want ...storage.ClientSession) {
	t.Helper()
	for _, c := range want {
		wantSession(t, s, c)
	}
}

// wantNoSessions checks none of the sessions is stored.
func wantNoSessions(t *testing.T, s storage.Store, what string, gone ...storage.ClientSession) {
	t.Helper()
	for _, c := range gone {
		_, err := s.GetClientSession(t.Context(), c.TokenHash)
		wantNotFound(t, fmt.Sprintf("%s: GetClientSession(%s of user %q)", what, c.TokenHash, c.UserID), err)
	}
}

func testClientSessionRoundTrip(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "sessions"))
	full := fullSession(app.ID, "user-1")
	bare := minimalSession(app.ID)
	// The contract lets a session of an app that does not exist be saved.
	orphan := fullSession("no-such-app", "user-2")
	mustSaveSessions(t, s, full, bare, orphan)
	wantSessions(t, s, full, bare, orphan)

	// An expired session is still answered: the caller judges ExpiresAt.
	expired := fullSession(app.ID, "user-3")
	expired.ExpiresAt = ms(-24 * time.Hour)
	mustSaveSessions(t, s, expired)
	wantSession(t, s, expired)

	for _, h := range []string{"", "no-such-hash", full.TokenHash[:20], fmt.Sprintf("%064X", 0x5e55000)} {
		_, err := s.GetClientSession(ctx, h)
		wantNotFound(t, fmt.Sprintf("GetClientSession(%q)", h), err)
	}
}

// testClientSessionTimePrecision writes every time field at the edges of millisecond
// precision and reads each back as the same instant, in UTC.
func testClientSessionTimePrecision(t *testing.T, s storage.Store) {
	for _, tm := range timeCases {
		c := minimalSession("app-time")
		c.CreatedAt, c.LoginAt, c.ExpiresAt = tm, tm.Add(time.Millisecond), tm.Add(-time.Millisecond)
		mustSaveSessions(t, s, c)
		wantSession(t, s, c)
	}
}

func testClientSessionUpsertReplaces(t *testing.T, s storage.Store) {
	ctx := t.Context()
	first := fullSession("app-a", "user-a")
	bystander := fullSession("app-a", "user-a")
	mustSaveSessions(t, s, first, bystander)

	// Every field changes, the user and app included: the copy is replaced whole.
	next := fullSession("app-b", "user-b")
	next.TokenHash = first.TokenHash
	next.CreatedAt, next.LoginAt, next.ExpiresAt = ms(time.Minute), ms(2*time.Minute), ms(48*time.Hour)
	mustSaveSessions(t, s, next)
	wantSession(t, s, next)
	wantSession(t, s, bystander)
	// The replaced copy is found under its new user only.
	if n, err := s.DeleteUserClientSessions(ctx, "app-a", "user-a"); err != nil || n != 1 {
		t.Errorf("DeleteUserClientSessions(old user) = (%d, %v), want 1 (the bystander only)", n, err)
	}
	wantSession(t, s, next)

	// Zero values overwrite too (a session back to its pre-login form).
	zero := minimalSession("app-b")
	zero.TokenHash = first.TokenHash
	mustSaveSessions(t, s, zero)
	wantSession(t, s, zero)
	if n, err := s.DeleteUserClientSessions(ctx, "app-b", "user-b"); err != nil || n != 0 {
		t.Errorf("DeleteUserClientSessions(user of the replaced copy) = (%d, %v), want 0", n, err)
	}
	wantSession(t, s, zero)

	// Within one batch the later copy of a token hash wins.
	older, newer := fullSession("app-c", "user-c"), fullSession("app-c", "user-c")
	newer.TokenHash = older.TokenHash
	newer.ExpiresAt = older.ExpiresAt.Add(time.Minute)
	mustSaveSessions(t, s, older, newer)
	wantSession(t, s, newer)
}

func testClientSessionBatch(t *testing.T, s storage.Store) {
	ctx := t.Context()
	// Nothing to save is no error.
	if err := s.SaveClientSessions(ctx, nil); err != nil {
		t.Fatalf("SaveClientSessions(nil): %v", err)
	}
	if err := s.SaveClientSessions(ctx, []storage.ClientSession{}); err != nil {
		t.Fatalf("SaveClientSessions(empty): %v", err)
	}

	// A batch of new and already stored copies, over several apps and users.
	stored := []storage.ClientSession{fullSession("app-1", "u1"), fullSession("app-2", "u2")}
	mustSaveSessions(t, s, stored...)
	var batch []storage.ClientSession
	for i := range 300 {
		c := fullSession(fmt.Sprintf("app-%d", i%3), fmt.Sprintf("u%d", i%7))
		c.ExpiresAt = ms(time.Duration(i) * time.Second)
		if i%5 == 0 {
			c.UserID, c.Username, c.LoginAt = "", "", time.Time{}
		}
		batch = append(batch, c)
	}
	for i, c := range stored {
		c.Version, c.ExpiresAt = "9.9.9", ms(time.Duration(72+i)*time.Hour)
		stored[i] = c
		batch = append(batch, c)
	}
	mustSaveSessions(t, s, batch...)
	wantSessions(t, s, batch...)
}

func testClientSessionDelete(t *testing.T, s storage.Store) {
	ctx := t.Context()
	var gone, kept []storage.ClientSession
	for i := range 80 {
		c := minimalSession(fmt.Sprintf("app-%d", i%2))
		if i < 60 {
			gone = append(gone, c)
		} else {
			kept = append(kept, c)
		}
	}
	mustSaveSessions(t, s, append(gone, kept...)...)

	// Nothing to delete is no error.
	if err := s.DeleteClientSessions(ctx, nil); err != nil {
		t.Fatalf("DeleteClientSessions(nil): %v", err)
	}
	if err := s.DeleteClientSessions(ctx, []string{}); err != nil {
		t.Fatalf("DeleteClientSessions(empty): %v", err)
	}
	wantSessions(t, s, gone[0], kept[0])

	// 1200 hashes, more than one chunk of a delete in either engine: every 20th is a
	// stored session's (so some sit on each side of the chunk bounds), the rest are absent,
	// which is no error; one is given twice.
	var hashes []string
	for i := range 1200 {
		if i%20 == 0 {
			hashes = append(hashes, gone[i/20].TokenHash)
		} else {
			hashes = append(hashes, fmt.Sprintf("absent-%d", i))
		}
	}
	hashes = append(hashes, gone[0].TokenHash)
	if err := s.DeleteClientSessions(ctx, hashes); err != nil {
		t.Fatalf("DeleteClientSessions: %v", err)
	}
	wantNoSessions(t, s, "after DeleteClientSessions", gone...)
	wantSessions(t, s, kept...)

	// Only absent hashes, some of them deleted already.
	if err := s.DeleteClientSessions(ctx, []string{gone[0].TokenHash, "absent-x"}); err != nil {
		t.Fatalf("DeleteClientSessions of absent hashes: %v", err)
	}
	wantSessions(t, s, kept...)
}

func testClientSessionDeleteUser(t *testing.T, s storage.Store) {
	ctx := t.Context()
	var doomed []storage.ClientSession
	for range 3 {
		doomed = append(doomed, fullSession("app-a", "user-1"))
	}
	others := []storage.ClientSession{
		fullSession("app-a", "user-2"),
		fullSession("app-b", "user-1"), // the same user id in another app
		fullSession("app-a", "USER-1"), // ids are compared as stored
		minimalSession("app-a"),        // before login: no user
		minimalSession("app-a"),
	}
	mustSaveSessions(t, s, append(doomed, others...)...)

	if n, err := s.DeleteUserClientSessions(ctx, "app-a", "user-1"); err != nil || n != len(doomed) {
		t.Fatalf("DeleteUserClientSessions = (%d, %v), want %d", n, err, len(doomed))
	}
	wantNoSessions(t, s, "after DeleteUserClientSessions", doomed...)
	wantSessions(t, s, others...)

	for _, c := range []struct{ app, user string }{
		{"app-a", "user-1"},  // again: nothing left
		{"app-c", "user-1"},  // no such app
		{"app-a", "no-user"}, // no such user
		{"app-a", ""},        // sessions before login belong to no user
		{"", "user-1"},
	} {
		if n, err := s.DeleteUserClientSessions(ctx, c.app, c.user); err != nil || n != 0 {
			t.Errorf("DeleteUserClientSessions(%q, %q) = (%d, %v), want 0", c.app, c.user, n, err)
		}
	}
	wantSessions(t, s, others...)
}

func testClientSessionDeleteExpired(t *testing.T, s storage.Store) {
	ctx := t.Context()
	now := base
	at := func(expires time.Time) storage.ClientSession {
		c := fullSession("app-1", "user-1")
		c.ExpiresAt = expires
		return c
	}
	expired := []storage.ClientSession{
		at(now), // at the instant: expired
		at(now.Add(-time.Millisecond)),
		at(ms(-30 * 24 * time.Hour)),
		at(time.Time{}), // no expiry stored reads as the earliest instant
	}
	live := []storage.ClientSession{
		at(now.Add(time.Millisecond)),
		at(now.Add(time.Hour)),
		at(ms(365 * 24 * time.Hour)),
	}
	mustSaveSessions(t, s, append(expired, live...)...)

	if n, err := s.DeleteExpiredClientSessions(ctx, now); err != nil || n != len(expired) {
		t.Fatalf("DeleteExpiredClientSessions = (%d, %v), want %d", n, err, len(expired))
	}
	wantNoSessions(t, s, "after DeleteExpiredClientSessions", expired...)
	wantSessions(t, s, live...)
	if n, err := s.DeleteExpiredClientSessions(ctx, now); err != nil || n != 0 {
		t.Errorf("second DeleteExpiredClientSessions = (%d, %v), want 0", n, err)
	}

	// A millisecond later the next one goes.
	if n, err := s.DeleteExpiredClientSessions(ctx, now.Add(time.Millisecond)); err != nil || n != 1 {
		t.Errorf("DeleteExpiredClientSessions(now+1ms) = (%d, %v), want 1", n, err)
	}
	wantNoSessions(t, s, "after DeleteExpiredClientSessions(now+1ms)", live[0])
	wantSessions(t, s, live[1:]...)
}

func testClientSessionDeletedWithApp(t *testing.T, s storage.Store) {
	ctx := t.Context()
	doomedApp := mustCreateApp(t, s, fullApp("acc-1", "doomed"))
	keptApp := mustCreateApp(t, s, fullApp("acc-1", "kept"))
	doomed := []storage.ClientSession{fullSession(doomedApp.ID, "u1"), fullSession(doomedApp.ID, "u2"), minimalSession(doomedApp.ID)}
	kept := []storage.ClientSession{fullSession(keptApp.ID, "u1"), minimalSession(keptApp.ID)}
	mustSaveSessions(t, s, append(doomed, kept...)...)

	// Another account's delete sweeps nothing.
	wantNotFound(t, "DeleteApp by another account", s.DeleteApp(ctx, "acc-2", doomedApp.ID))
	wantSessions(t, s, doomed...)

	if err := s.DeleteApp(ctx, "acc-1", doomedApp.ID); err != nil {
		t.Fatalf("DeleteApp: %v", err)
	}
	wantNoSessions(t, s, "after DeleteApp", doomed...)
	wantSessions(t, s, kept...)
	if n, err := s.DeleteUserClientSessions(ctx, doomedApp.ID, "u1"); err != nil || n != 0 {
		t.Errorf("DeleteUserClientSessions(deleted app) = (%d, %v), want 0", n, err)
	}
}

// testClientSessionConcurrentSave saves the same new token hashes from several writers at
// once (two nodes flushing their copies of one session): every save succeeds and one of
// the copies is stored whole.
//
// Four writers over ten sessions: at most 30 upserts lose their race. FerretDB v1.24 (the
// MongoDB-wire test server) keeps one of its SQLite pool's 100 connections for each upsert
// it loses to a concurrent one, so 8 writers over 20 sessions (up to 140 lost) hung the
// test server about one run in ten; the race this proves is the same, and MongoDB has no
// such limit.
func testClientSessionConcurrentSave(t *testing.T, s storage.Store) {
	const workers, sessions = 4, 10
	copies := make([][]storage.ClientSession, workers)
	for range sessions {
		c := fullSession("app-1", "user-1")
		for w := range workers {
			v := c
			v.Version, v.ExpiresAt = fmt.Sprintf("w%d", w), c.ExpiresAt.Add(time.Duration(w)*time.Millisecond)
			copies[w] = append(copies[w], v)
		}
	}
	raceUpdates(t, workers, func(w int) error { return s.SaveClientSessions(t.Context(), copies[w]) })
	for i := range sessions {
		got, err := s.GetClientSession(t.Context(), copies[0][i].TokenHash)
		if err != nil {
			t.Fatalf("GetClientSession: %v", err)
		}
		var w int
		if _, err := fmt.Sscanf(got.Version, "w%d", &w); err != nil || w < 0 || w >= workers {
			t.Fatalf("GetClientSession: Version %q is none of the writers'", got.Version)
		}
		if d := diff(copies[w][i], got); d != "" {
			t.Errorf("GetClientSession: not writer %d's copy whole: %s", w, d)
		}
	}
}

// testClientSessionExtendOnlyNeverCreates: an ExtendOnly copy moves a stored one's expiry
// later, changes nothing else, and never creates one, in SaveClientSessions and in
// SaveClientRound (mixed with upserts, more than a statement's chunk of each): a call's
// new expiry marked after a kill deleted the copy must not bring it back, nor may the
// session the call read undo a sign-in written since, nor an older expiry shorten it.
func testClientSessionExtendOnlyNeverCreates(t *testing.T, s storage.Store) {
	ctx := t.Context()
	app := mustCreateApp(t, s, fullApp("acc-1", "extend"))
	stored := fullSession(app.ID, "u-stored")
	mustSaveSessions(t, s, stored)

	extended := stored
	extended.ExpiresAt = ms(2 * time.Hour)
	extended.IP = "203.0.113.99"
	extended.ExtendOnly = true
	absent := fullSession(app.ID, "u-absent")
	absent.ExtendOnly = true
	mustSaveSessions(t, s, extended, absent)
	extended.ExtendOnly = false
	want := stored
	want.ExpiresAt = extended.ExpiresAt
	wantSession(t, s, want) // the new expiry, not the call's stale IP
	wantNoSessions(t, s, "an ExtendOnly save of a copy never stored", absent)

	earlier := extended
	earlier.ExpiresAt = ms(90 * time.Minute) // another node's older mark, written last
	earlier.ExtendOnly = true
	mustSaveSessions(t, s, earlier)
	wantSession(t, s, want)

	// One batch that creates a copy and then extends it: both hold.
	twice := fullSession(app.ID, "u-twice")
	twiceExtended := twice
	twiceExtended.ExpiresAt = ms(5 * time.Hour)
	twiceExtended.Username = "stale"
	twiceExtended.ExtendOnly = true
	mustSaveSessions(t, s, twice, twiceExtended)
	twice.ExpiresAt = twiceExtended.ExpiresAt
	wantSession(t, s, twice)

	var round []storage.ClientSession
	var created []storage.ClientSession
	for i := range 40 { // more than a statement's chunk of upserts (16) and of extends (32 on SQLite)
		c := fullSession(app.ID, fmt.Sprintf("u-round-%d", i))
		created = append(created, c)
		round = append(round, c)
		if i%5 == 0 {
			gone := fullSession(app.ID, fmt.Sprintf("u-gone-%d", i))
			gone.ExtendOnly = true
			round = append(round, gone)
			defer wantNoSessions(t, s, "an ExtendOnly copy in a round", gone)
		}
	}
	if err := s.SaveClientRound(ctx, round, nil); err != nil {
		t.Fatalf("SaveClientRound: %v", err)
	}
	wantSessions(t, s, created...)

	// A round of more extends than a statement's chunk, some of copies never stored.
	round = round[:0]
	for i, c := range created {
		c.ExpiresAt = ms(time.Duration(4*60+i) * time.Minute)
		c.IP = "198.51.100.7"
		c.ExtendOnly = true
		round = append(round, c)
		created[i].ExpiresAt = c.ExpiresAt
		if i%4 == 0 {
			gone := fullSession(app.ID, fmt.Sprintf("u-gone-again-%d", i))
			gone.ExtendOnly = true
			round = append(round, gone)
			defer wantNoSessions(t, s, "an ExtendOnly copy in a round of extends", gone)
		}
	}
	round = append(round, round...) // more than a chunk (32 on SQLite), each twice
	if err := s.SaveClientRound(ctx, round, nil); err != nil {
		t.Fatalf("SaveClientRound(extends): %v", err)
	}
	wantSessions(t, s, created...)

	// Deleted (an end or a kill), then a late mark of the call before it: still gone.
	if err := s.DeleteClientSessions(ctx, []string{stored.TokenHash}); err != nil {
		t.Fatalf("DeleteClientSessions: %v", err)
	}
	late := extended
	late.ExpiresAt = ms(3 * time.Hour)
	late.ExtendOnly = true
	if err := s.SaveClientRound(ctx, []storage.ClientSession{late}, nil); err != nil {
		t.Fatalf("SaveClientRound(late extend): %v", err)
	}
	wantNoSessions(t, s, "an ExtendOnly save after the delete", stored)
}
