package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	ts "github.com/keyward/keyward/internal/testserver"
	"github.com/keyward/keyward/storage"
)

// storedEvent is an event of the log as stored, its payload decoded.
type storedEvent struct {
	Type, AppID string
	Username    string         `json:"username"`
	Message     string         `json:"message"`
	Data        map[string]any `json:"data"`
}

// eventsAfter answers the app's events stored after pos, read from the store at once: an
// acknowledged change's events are stored before its answer, so nothing is waited for.
func eventsAfter(t *testing.T, s *ts.Server, appID string, pos int64) []storedEvent {
	t.Helper()
	st := s.Node.Core().Store
	var out []storedEvent
	for {
		recs, err := st.ReadEvents(t.Context(), pos, 500)
		if err != nil {
			t.Fatalf("ReadEvents: %v", err)
		}
		if len(recs) == 0 {
			return out
		}
		for _, r := range recs {
			pos = r.Pos
			if r.AppID != appID {
				continue
			}
			e := storedEvent{Type: r.Type, AppID: r.AppID}
			if err := json.Unmarshal(r.Payload, &e); err != nil {
				t.Fatalf("event %s: %v", r.ID, err)
			}
			out = append(out, e)
		}
	}
}

func headPos(t *testing.T, s *ts.Server) int64 {
	t.Helper()
	pos, err := s.Node.Core().Store.LastEventPos(t.Context())
	if err != nil {
		t.Fatalf("LastEventPos: %v", err)
	}
	return pos
}

// ofType keeps the events of one type.
func ofType(evs []storedEvent, typ string) []storedEvent {
	var out []storedEvent
	for _, e := range evs {
		if e.Type == typ {
			out = append(out, e)
		}
	}
	return out
}

// TestTokenEndAndKillEventsStoredBeforeTheAnswer: a token check, a session's end and a kill
// of a user's sessions have their events in the log when they are answered, once each (on
// SQLite in the change's own transaction: the token's use, the delete of the sessions'
// durable copies), and an ended or killed session does not come back from its copy.
func TestTokenEndAndKillEventsStoredBeforeTheAnswer(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("Durable")
		r := a.do("POST", "/api/apps/"+appID+"/tokens", map[string]any{"count": 1, "maxUses": 1})
		expectOK(t, r, http.StatusCreated)
		token := r.Data()["tokens"].([]any)[0].(map[string]any)["token"].(string)

		c := newSDK(t, s, secret)
		c.mustInit()
		expectOK(t, c.withNonce("register", map[string]any{"username": "erin", "password": "pw-erin-1"}), http.StatusOK)

		// A valid use: its event is stored with the use.
		pos := headPos(t, s)
		if d := c.call("token", map[string]any{"token": token}).Data(); d["valid"] != true {
			t.Fatalf("first use: %v", d)
		}
		evs := ofType(eventsAfter(t, s, appID, pos), "token.validate")
		if len(evs) != 1 || !strings.Contains(evs[0].Message, "valid=true") || evs[0].Username != "erin" {
			t.Fatalf("after a valid use, token.validate events: %+v", evs)
		}
		// A refused use changes nothing and stores its own event.
		pos = headPos(t, s)
		if d := c.call("token", map[string]any{"token": token}).Data(); d["valid"] != false {
			t.Fatalf("second use of a one-use token: %v", d)
		}
		evs = ofType(eventsAfter(t, s, appID, pos), "token.validate")
		if len(evs) != 1 || !strings.Contains(evs[0].Message, "valid=false") {
			t.Fatalf("after a refused use, token.validate events: %+v", evs)
		}

		// A session's end.
		pos = headPos(t, s)
		expectOK(t, c.post("end", nil, ""), http.StatusOK)
		evs = ofType(eventsAfter(t, s, appID, pos), "session.end")
		if len(evs) != 1 || evs[0].Username != "erin" {
			t.Fatalf("after end, session.end events: %+v", evs)
		}
		expect(t, c.post("check", nil, ""), http.StatusUnauthorized, "UNAUTHORIZED")

		// A kill of the user's sessions, two of them live.
		var live []*sdk
		for range 2 {
			k := newSDK(t, s, secret)
			k.mustInit()
			expectOK(t, k.withNonce("login", map[string]any{"username": "erin", "password": "pw-erin-1"}), http.StatusOK)
			live = append(live, k)
		}
		r = a.do("GET", "/api/apps/"+appID+"/users?search=erin", nil)
		expectOK(t, r, http.StatusOK)
		userID := r.Data()["users"].([]any)[0].(map[string]any)["id"].(string)
		pos = headPos(t, s)
		r = a.do("POST", "/api/apps/"+appID+"/users/"+userID+"/kill-sessions", nil)
		expectOK(t, r, http.StatusOK)
		if r.Data()["deleted"] != float64(2) {
			t.Fatalf("kill-sessions: %s", r.Raw)
		}
		evs = ofType(eventsAfter(t, s, appID, pos), "user.session_kill")
		if len(evs) != 1 || evs[0].Data["deleted"] != float64(2) || evs[0].Data["userId"] != userID {
			t.Fatalf("after kill-sessions, user.session_kill events: %+v", evs)
		}
		for _, k := range live {
			expect(t, k.post("check", nil, ""), http.StatusUnauthorized, "UNAUTHORIZED")
		}
		// No durable copy is left to bring a killed session back.
		if n, err := s.Node.Core().Store.DeleteUserClientSessions(storage.WithoutEventOutbox(t.Context()), appID, userID); err != nil || n != 0 {
			t.Fatalf("copies of the killed sessions left: %d, %v", n, err)
		}
	})
}

// TestInitAfterSecretRegenerated: init remembers the app a secret opened (no store read
// per init), yet a regenerated secret stops opening sessions at once and the new one
// opens them.
func TestInitAfterSecretRegenerated(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("Rotate")
		for range 2 { // the second init finds the app remembered
			newSDK(t, s, secret).mustInit()
		}
		r := a.do("POST", "/api/apps/"+appID+"/secret/regenerate", nil)
		expectOK(t, r, http.StatusOK)
		fresh := r.Data()["secret"].(string)
		expect(t, newSDK(t, s, secret).init("1.0.0", "host"), http.StatusUnauthorized, "UNAUTHORIZED")
		for range 2 {
			newSDK(t, s, fresh).mustInit()
		}
		expect(t, newSDK(t, s, secret).init("1.0.0", "host"), http.StatusUnauthorized, "UNAUTHORIZED")
		expectOK(t, a.do("DELETE", "/api/apps/"+appID, map[string]any{"confirm": true}), http.StatusOK)
		expect(t, newSDK(t, s, fresh).init("1.0.0", "host"), http.StatusUnauthorized, "UNAUTHORIZED")
	})
}
