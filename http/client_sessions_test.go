package httpapi_test

import (
	"io"
	"net/http"
	"strings"
	"testing"

	ts "github.com/keyward/keyward/internal/testserver"
)

func TestKillSessionsAndBanEndClientSessions(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("Kill")
		var sdks []*sdk
		for range 2 {
			c := newSDK(t, s, secret)
			c.mustInit()
			sdks = append(sdks, c)
		}
		expectOK(t, sdks[0].withNonce("register", map[string]any{"username": "carol", "password": "pw-carol-1"}), http.StatusOK)
		expectOK(t, sdks[1].withNonce("login", map[string]any{"username": "carol", "password": "pw-carol-1"}), http.StatusOK)
		bystander := newSDK(t, s, secret)
		bystander.mustInit()

		r := a.do("GET", "/api/apps/"+appID+"/stats", nil)
		expectOK(t, r, http.StatusOK)
		if r.Data()["sessions"].(map[string]any)["active"] != float64(3) {
			t.Fatalf("stats: %s", r.Raw)
		}
		r = a.do("GET", "/api/apps/"+appID+"/users?search=carol", nil)
		expectOK(t, r, http.StatusOK)
		userID := r.Data()["users"].([]any)[0].(map[string]any)["id"].(string)

		r = a.do("POST", "/api/apps/"+appID+"/users/"+userID+"/kill-sessions", nil)
		expectOK(t, r, http.StatusOK)
		if r.Data()["deleted"] != float64(2) {
			t.Fatalf("kill-sessions: %s", r.Raw)
		}
		for _, c := range sdks {
			expect(t, c.post("check", nil, ""), http.StatusUnauthorized, "UNAUTHORIZED")
		}
		expectOK(t, bystander.post("check", nil, ""), http.StatusOK)
		waitLog(t, a, appID, "user.session_kill")
		expect(t, a.do("POST", "/api/apps/"+appID+"/users/nope/kill-sessions", nil), http.StatusNotFound, "NOT_FOUND")

		// A ban ends the user's sessions through the event pipeline.
		c := newSDK(t, s, secret)
		c.mustInit()
		expectOK(t, c.withNonce("login", map[string]any{"username": "carol", "password": "pw-carol-1"}), http.StatusOK)
		expectOK(t, a.do("PATCH", "/api/apps/"+appID+"/users/"+userID, map[string]any{"banned": true, "banReason": "spam"}), http.StatusOK)
		waitFor(t, func() bool { return c.post("check", nil, "").Code() == "UNAUTHORIZED" })
	})
}

func TestClientHWIDResetByMail(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("Reset")
		expectOK(t, a.do("PATCH", "/api/apps/"+appID, map[string]any{"lockHwid": true}), http.StatusOK)
		c := newSDK(t, s, secret)
		c.mustInit()
		expect(t, c.post("request-reset", nil, ""), http.StatusUnauthorized, "NOT_LOGGED_IN")
		expectOK(t, c.withNonce("register", map[string]any{"username": "dave", "password": "pw-dave-1", "email": "dave@example.com", "hwid": "old-pc"}), http.StatusOK)
		r := a.do("GET", "/api/apps/"+appID+"/users?search=dave", nil)
		expectOK(t, r, http.StatusOK)
		userID := r.Data()["users"].([]any)[0].(map[string]any)["id"].(string)
		expectOK(t, a.do("PATCH", "/api/apps/"+appID+"/users/"+userID, map[string]any{"hwidResetMax": 1}), http.StatusOK)

		other := newSDK(t, s, secret)
		other.mustInit()
		expect(t, other.withNonce("login", map[string]any{"username": "dave", "password": "pw-dave-1", "hwid": "new-pc"}), http.StatusForbidden, "HWID_LOCKED")

		expectOK(t, c.post("request-reset", map[string]any{"licenseKey": "", "hwid": ""}, ""), http.StatusOK)
		mail := s.WaitMail(t, "dave@example.com", "Confirm your device reset")
		if !strings.Contains(mail, "/api/client/confirm-reset/") {
			t.Fatalf("no reset link in the mail:\n%s", mail)
		}
		token := mailedToken(t, mail)
		get := func(token string) (int, string) {
			resp, err := http.Get(s.URL + "/api/client/confirm-reset/" + token)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/html") {
				t.Fatalf("confirm page is %s", resp.Header.Get("Content-Type"))
			}
			return resp.StatusCode, string(b)
		}
		if status, page := get(token); status != http.StatusOK || !strings.Contains(page, "Reset confirmed") {
			t.Fatalf("confirm: %d %s", status, page)
		}
		if status, _ := get(token); status != http.StatusNotFound {
			t.Fatalf("a reset link worked twice: %d", status)
		}
		if status, page := get("<script>"); status != http.StatusNotFound || strings.Contains(page, "<script>") {
			t.Fatalf("bad token page: %d %s", status, page)
		}
		// The new device binds now; the reset limit of 1 is used up.
		expectOK(t, other.withNonce("login", map[string]any{"username": "dave", "password": "pw-dave-1", "hwid": "new-pc"}), http.StatusOK)
		expect(t, c.post("request-reset", nil, ""), http.StatusForbidden, "FORBIDDEN")
		waitLog(t, a, appID, "user.hwid_reset")
	})
}

// TestClientSessionSurvivesARestart stops an embedded node and starts another on the same
// data: the session, kept in the memory engine while running, comes back from its durable
// copy; an ended one does not.
func TestClientSessionSurvivesARestart(t *testing.T) {
	env := ts.Env(t, ts.Pairs[0])
	env["KEYWARD_ADDR"] = "127.0.0.1:0"
	s := ts.StartEnv(t, env)
	a := api{t, s, newOwner(t, s).Token}
	_, secret := a.createApp("Restart")
	kept := newSDK(t, s, secret)
	kept.mustInit()
	expectOK(t, kept.withNonce("register", map[string]any{"username": "frank", "password": "pw-frank-1"}), http.StatusOK)
	ended := newSDK(t, s, secret)
	ended.mustInit()
	expectOK(t, ended.post("end", nil, ""), http.StatusOK)
	s.Stop() // a graceful stop writes the last session changes

	s2 := ts.StartEnv(t, env)
	kept.s, ended.s = s2, s2
	r := kept.post("check", nil, "")
	expectOK(t, r, http.StatusOK)
	if r.Data()["username"] != "frank" {
		t.Fatalf("restored session: %s", r.Raw)
	}
	expectOK(t, kept.withNonce("heartbeat", nil), http.StatusOK)
	expect(t, ended.post("check", nil, ""), http.StatusUnauthorized, "UNAUTHORIZED")
}
