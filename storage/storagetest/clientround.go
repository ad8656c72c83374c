package storagetest

import (
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

var clientRoundTests = []subtest{
	{"ClientRoundSessionsLoginsAndEvents", testClientRoundSessionsLoginsAndEvents},
}

// testClientRoundSessionsLoginsAndEvents: SaveClientRound saves a round's sessions and
// records its logins (as SaveClientSessions and RecordLogins do), and takes the context's
// event outbox as storage.EventOutbox says: stored with the round (SQLite, one
// transaction) or left to the caller (MongoDB). An empty round writes nothing.
func testClientRoundSessionsLoginsAndEvents(t *testing.T, s storage.Store) {
	ctx := t.Context()
	acc := fullAccount("round")
	if err := s.CreateAccount(ctx, acc); err != nil {
		t.Fatalf("CreateAccount: %v", err)
	}
	app := mustCreateApp(t, s, fullApp(acc.ID, "Round"))
	alice := mustCreateUser(t, s, fullUser(app.ID, "alice"))
	bob := mustCreateUser(t, s, fullUser(app.ID, "bob"))
	sa, sb, init := fullSession(app.ID, alice.ID), fullSession(app.ID, bob.ID), minimalSession(app.ID)
	logins := []storage.UserLogin{
		{AppID: app.ID, UserID: alice.ID, IP: "192.0.2.31", HWID: "HWID-round", At: ms(time.Minute + time.Millisecond)},
		{AppID: app.ID, UserID: bob.ID, IP: "2001:db8::31", At: ms(time.Minute + 2*time.Millisecond)},
	}
	head := len(readAll(t, s, 0))
	ob := &outbox{recs: []storage.EventRecord{newEvent(app.ID, "user.login", ms(time.Minute)), newEvent(app.ID, "user.login", ms(time.Minute))}}
	if err := s.SaveClientRound(storage.WithEventOutbox(ctx, ob), []storage.ClientSession{sa, sb, init}, logins); err != nil {
		t.Fatalf("SaveClientRound: %v", err)
	}
	wantSessions(t, s, sa, sb, init)
	a := loggedIn(alice, logins[0].IP, logins[0].At)
	a.HWID = "HWID-round"
	wantUser(t, s, a)
	wantUser(t, s, loggedIn(bob, logins[1].IP, logins[1].At))
	got := readAll(t, s, 0)
	if ob.stored == nil {
		if len(got) != head {
			t.Fatalf("the engine did not take the outbox but the log grew from %d to %d events", head, len(got))
		}
	} else {
		if len(got) != head+2 || got[head].ID != ob.recs[0].ID || got[head+1].ID != ob.recs[1].ID {
			t.Fatalf("the engine took the outbox: the log holds %d events after %d, want the round's 2", len(got), head)
		}
	}

	// Sessions alone, logins alone and nothing at all are rounds too.
	sc := fullSession(app.ID, alice.ID)
	if err := s.SaveClientRound(ctx, []storage.ClientSession{sc}, nil); err != nil {
		t.Fatalf("SaveClientRound(sessions only): %v", err)
	}
	wantSession(t, s, sc)
	later := storage.UserLogin{AppID: app.ID, UserID: bob.ID, IP: "192.0.2.32", At: ms(2 * time.Minute)}
	if err := s.SaveClientRound(ctx, nil, []storage.UserLogin{later}); err != nil {
		t.Fatalf("SaveClientRound(logins only): %v", err)
	}
	wantUser(t, s, loggedIn(bob, later.IP, later.At))
	if err := s.SaveClientRound(ctx, nil, nil); err != nil {
		t.Fatalf("SaveClientRound(nothing): %v", err)
	}
}
