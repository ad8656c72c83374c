package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	ts "github.com/keyward/keyward/internal/testserver"
)

// TestGracePeriod: a user expired less than graceSeconds ago signs in with a warning and a
// user.grace log entry, one expired longer ago gets EXPIRED, the user list filters the
// users in grace, and without grace nothing changes.
func TestGracePeriod(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("Grace")
		now := s.Clock().Now().UTC()
		recent := now.Add(-10 * time.Minute).Truncate(time.Second)
		for name, exp := range map[string]time.Time{"recent": recent, "old": now.Add(-2 * time.Hour), "live": now.Add(48 * time.Hour)} {
			expectOK(t, a.do("POST", "/api/apps/"+appID+"/users", map[string]any{"username": name, "password": "pw-" + name + "-1",
				"expiresAt": exp.Format(time.RFC3339)}), http.StatusCreated)
		}
		signIn := func(name string) ts.Response {
			c := newSDK(t, s, secret)
			c.mustInit()
			return c.withNonce("login", map[string]any{"username": name, "password": "pw-" + name + "-1", "hwid": "h"})
		}
		inGrace := func() []string {
			r := a.do("GET", "/api/apps/"+appID+"/users?inGrace=true", nil)
			expectOK(t, r, http.StatusOK)
			var names []string
			for _, u := range r.Data()["users"].([]any) {
				names = append(names, u.(map[string]any)["username"].(string))
			}
			return names
		}

		// No grace by default: the usual EXPIRED, and nobody is in grace.
		expect(t, signIn("recent"), http.StatusForbidden, "EXPIRED")
		if got := inGrace(); len(got) != 0 {
			t.Fatalf("in grace without grace: %v", got)
		}

		r := a.do("PATCH", "/api/apps/"+appID, map[string]any{"graceSeconds": 3600})
		expectOK(t, r, http.StatusOK)
		if r.Data()["graceSeconds"] != float64(3600) {
			t.Fatalf("update: %s", r.Raw)
		}
		expect(t, a.do("PATCH", "/api/apps/"+appID, map[string]any{"graceSeconds": -1}), http.StatusBadRequest, "VALIDATION_ERROR")
		var ok ts.Response
		waitFor(t, func() bool { ok = signIn("recent"); return ok.Status == http.StatusOK })
		want := "expired; in grace until " + recent.Add(time.Hour).Format(time.RFC3339)
		if w, _ := ok.Data()["warnings"].([]any); len(w) != 1 || w[0] != want {
			t.Fatalf("warnings = %v, want [%q]", ok.Data()["warnings"], want)
		}
		entry := waitLog(t, a, appID, "user.grace")
		if entry["username"] != "recent" || !strings.Contains(entry["message"].(string), "grace") {
			t.Fatalf("user.grace entry: %v", entry)
		}
		expect(t, signIn("old"), http.StatusForbidden, "EXPIRED")
		if w := signIn("live").Data()["warnings"].([]any); len(w) != 1 || !strings.HasPrefix(w[0].(string), "subscription expires at") {
			t.Fatalf("live user warnings: %v", w)
		}
		if got := inGrace(); len(got) != 1 || got[0] != "recent" {
			t.Fatalf("users in grace: %v, want [recent]", got)
		}
		expect(t, a.do("GET", "/api/apps/"+appID+"/users?inGrace=maybe", nil), http.StatusBadRequest, "VALIDATION_ERROR")
	})
}
