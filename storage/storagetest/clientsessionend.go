package storagetest

import (
	"errors"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

var clientSessionEndTests = []subtest{
	{"ClientSessionEndCarriesEvents", testClientSessionEndCarriesEvents},
}

// testClientSessionEndCarriesEvents: the deletes of sessions' durable copies (a client's
// end, a kill of a user's sessions) take the context's event outbox as
// storage.EventOutbox says: stored with the delete (SQLite, one transaction: the copy gone
// and the event stored, or neither) or left to the caller (MongoDB, nothing in the log).
func testClientSessionEndCarriesEvents(t *testing.T, s storage.Store) {
	ctx := t.Context()
	acc := fullAccount("sessend")
	if err := s.CreateAccount(ctx, acc); err != nil {
		t.Fatalf("CreateAccount: %v", err)
	}
	app := mustCreateApp(t, s, fullApp(acc.ID, "SessionEnd"))
	alice := mustCreateUser(t, s, fullUser(app.ID, "alice"))
	ended, other := fullSession(app.ID, alice.ID), minimalSession(app.ID)
	k1, k2 := fullSession(app.ID, alice.ID), fullSession(app.ID, alice.ID)
	if err := s.SaveClientSessions(ctx, []storage.ClientSession{ended, other, k1, k2}); err != nil {
		t.Fatalf("SaveClientSessions: %v", err)
	}

	wantOutbox := func(op string, ob *outbox, head int) {
		t.Helper()
		got := readAll(t, s, 0)
		if ob.stored == nil {
			if len(got) != head {
				t.Fatalf("%s: the engine did not take the outbox but the log grew from %d to %d events", op, head, len(got))
			}
			return
		}
		if len(got) != head+1 || got[head].ID != ob.recs[0].ID || got[head].Type != ob.recs[0].Type {
			t.Fatalf("%s: the engine took the outbox: the log holds %d events after %d, want the delete's one", op, len(got), head)
		}
		if ob.stored[0].Pos != got[head].Pos || ob.stored[0].Seq == 0 {
			t.Fatalf("%s: Stored got pos %d seq %d, the log holds pos %d", op, ob.stored[0].Pos, ob.stored[0].Seq, got[head].Pos)
		}
	}

	// A client's end: one copy deleted with session.end.
	head := len(readAll(t, s, 0))
	end := &outbox{recs: []storage.EventRecord{newEvent(app.ID, "session.end", ms(time.Minute))}}
	if err := s.DeleteClientSessions(storage.WithEventOutbox(ctx, end), []string{ended.TokenHash}); err != nil {
		t.Fatalf("DeleteClientSessions: %v", err)
	}
	if _, err := s.GetClientSession(ctx, ended.TokenHash); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("the ended session's copy: %v, want ErrNotFound", err)
	}
	wantSessions(t, s, other, k1, k2)
	wantOutbox("DeleteClientSessions", end, head)

	// A kill: every copy of the user's deleted with user.session_kill.
	head = len(readAll(t, s, 0))
	kill := &outbox{recs: []storage.EventRecord{newEvent(app.ID, "user.session_kill", ms(2*time.Minute))}}
	n, err := s.DeleteUserClientSessions(storage.WithEventOutbox(ctx, kill), app.ID, alice.ID)
	if err != nil || n != 2 {
		t.Fatalf("DeleteUserClientSessions = %d, %v; want 2, nil", n, err)
	}
	for _, c := range []storage.ClientSession{k1, k2} {
		if _, err := s.GetClientSession(ctx, c.TokenHash); !errors.Is(err, storage.ErrNotFound) {
			t.Fatalf("a killed session's copy: %v, want ErrNotFound", err)
		}
	}
	wantSession(t, s, other)
	wantOutbox("DeleteUserClientSessions", kill, head)

	// A kill that finds no copy is still the kill's write: its event is stored with it
	// (or left to the caller), once.
	head = len(readAll(t, s, 0))
	again := &outbox{recs: []storage.EventRecord{newEvent(app.ID, "user.session_kill", ms(3*time.Minute))}}
	if n, err := s.DeleteUserClientSessions(storage.WithEventOutbox(ctx, again), app.ID, alice.ID); err != nil || n != 0 {
		t.Fatalf("DeleteUserClientSessions again = %d, %v; want 0, nil", n, err)
	}
	wantOutbox("DeleteUserClientSessions (none left)", again, head)
}
