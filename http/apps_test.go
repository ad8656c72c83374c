package httpapi_test

import (
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/core/accounts"
	ts "github.com/keyward/keyward/internal/testserver"
)

// setPlan moves an account to a plan, as an administrator would.
func setPlan(t *testing.T, s *ts.Server, username, plan string) {
	t.Helper()
	if _, err := s.Node.Accounts().ChangeAccountByUsername(t.Context(), username, accounts.Change{Plan: &plan}); err != nil {
		t.Fatal(err)
	}
}

type api struct {
	t     *testing.T
	s     *ts.Server
	token string
}

func (a api) do(method, path string, body any) ts.Response {
	a.t.Helper()
	return a.s.Do(a.t, ts.Req{Method: method, Path: path, Token: a.token, Body: body})
}

func (a api) createApp(name string) (id, secret string) {
	a.t.Helper()
	r := a.do("POST", "/api/apps", map[string]any{"name": name})
	expectOK(a.t, r, http.StatusCreated)
	return r.Data()["id"].(string), r.Data()["secret"].(string)
}

func TestApplications(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		a := api{t, s, o.Token}

		t.Run("free plan allows one app", func(t *testing.T) {
			expect(t, a.do("POST", "/api/apps", map[string]any{"name": ""}), http.StatusBadRequest, "VALIDATION_ERROR")
			r := a.do("POST", "/api/apps", map[string]any{"name": "First", "description": "d"})
			expectOK(t, r, http.StatusCreated)
			if len(r.Data()["secret"].(string)) < 43 || r.Data()["version"] != "1.0.0" || r.Data()["enabled"] != true {
				t.Fatalf("create reply: %s", r.Raw)
			}
			r = a.do("POST", "/api/apps", map[string]any{"name": "Second"})
			expect(t, r, http.StatusForbidden, "PLAN_LIMIT")
			if !strings.Contains(string(r.Raw), "1 application") {
				t.Fatalf("limit not in message: %s", r.Raw)
			}
		})
		setPlan(t, s, o.Username, "pro")
		id, secret := a.createApp("Game")
		if n := a.do("GET", "/api/auth/me", nil).Data()["applicationCount"]; n != float64(2) {
			t.Fatalf("applicationCount %v, want 2", n)
		}

		t.Run("get masks the secret", func(t *testing.T) {
			r := a.do("GET", "/api/apps/"+id, nil)
			expectOK(t, r, http.StatusOK)
			if r.Data()["secret"] != "***"+secret[len(secret)-6:] || r.Data()["lockHwid"] != false {
				t.Fatalf("get: %s", r.Raw)
			}
		})
		t.Run("names are unique per account", func(t *testing.T) {
			expect(t, a.do("POST", "/api/apps", map[string]any{"name": "game"}), http.StatusConflict, "CONFLICT")
			expect(t, a.do("PATCH", "/api/apps/"+id, map[string]any{"name": "First"}), http.StatusConflict, "CONFLICT")
			other := newOwner(t, s)
			r := s.Do(t, ts.Req{Method: "POST", Path: "/api/apps", Token: other.Token, Body: map[string]any{"name": "Game"}})
			expectOK(t, r, http.StatusCreated)
		})
		t.Run("update changes only the given fields", func(t *testing.T) {
			r := a.do("PATCH", "/api/apps/"+id, map[string]any{"paused": true, "lockHwid": true, "version": "2.0.0"})
			expectOK(t, r, http.StatusOK)
			d := r.Data()
			if d["paused"] != true || d["lockHwid"] != true || d["version"] != "2.0.0" || d["name"] != "Game" || d["enabled"] != true {
				t.Fatalf("update: %s", r.Raw)
			}
			expect(t, a.do("PATCH", "/api/apps/"+id, map[string]any{"paused": "yes"}), http.StatusBadRequest, "VALIDATION_ERROR")
		})
		t.Run("regenerate secret", func(t *testing.T) {
			r := a.do("POST", "/api/apps/"+id+"/secret/regenerate", nil)
			expectOK(t, r, http.StatusOK)
			fresh := r.Data()["secret"].(string)
			if fresh == secret || len(fresh) < 43 {
				t.Fatalf("secret: %s", r.Raw)
			}
			if got := a.do("GET", "/api/apps/"+id, nil).Data()["secret"]; got != "***"+fresh[len(fresh)-6:] {
				t.Fatalf("mask after regenerate: %v", got)
			}
		})
		t.Run("another owner's app is 404 on every route", func(t *testing.T) {
			stranger := api{t, s, newOwner(t, s).Token}
			for _, r := range []struct{ method, path string }{
				{"GET", ""}, {"PATCH", ""}, {"DELETE", ""}, {"POST", "/secret/regenerate"}, {"GET", "/stats"},
				{"GET", "/users"}, {"POST", "/users"}, {"GET", "/licenses"}, {"POST", "/licenses"}, {"POST", "/licenses/verify"},
				{"POST", "/licenses/bulk-delete"}, {"GET", "/devices"}, {"GET", "/tokens"}, {"POST", "/tokens"},
			} {
				body := map[string]any{"confirm": true, "name": "x", "username": "someone", "password": "pw-123456", "key": "X", "filter": "used", "count": 1}
				resp := stranger.do(r.method, "/api/apps/"+id+r.path, body)
				expect(t, resp, http.StatusNotFound, "NOT_FOUND")
			}
			expect(t, stranger.do("GET", "/api/apps/not-a-uuid", nil), http.StatusNotFound, "NOT_FOUND")
		})
		t.Run("delete needs confirm and removes only that app", func(t *testing.T) {
			keep, _ := a.createApp("Keep")
			a.do("POST", "/api/apps/"+keep+"/licenses", map[string]any{"count": 3})
			a.do("POST", "/api/apps/"+keep+"/users", map[string]any{"username": "stay", "password": "pw-123456"})
			a.do("POST", "/api/apps/"+id+"/licenses", map[string]any{"count": 5})
			a.do("POST", "/api/apps/"+id+"/users", map[string]any{"username": "goes", "password": "pw-123456"})
			a.do("POST", "/api/apps/"+id+"/tokens", map[string]any{"count": 2})
			expect(t, a.do("DELETE", "/api/apps/"+id, map[string]any{}), http.StatusBadRequest, "VALIDATION_ERROR")
			expect(t, a.do("DELETE", "/api/apps/"+id, map[string]any{"confirm": false}), http.StatusBadRequest, "VALIDATION_ERROR")
			expectOK(t, a.do("GET", "/api/apps/"+id, nil), http.StatusOK)
			expectOK(t, a.do("DELETE", "/api/apps/"+id, map[string]any{"confirm": true}), http.StatusOK)
			expect(t, a.do("GET", "/api/apps/"+id, nil), http.StatusNotFound, "NOT_FOUND")
			list := a.do("GET", "/api/apps", nil)
			expectOK(t, list, http.StatusOK)
			apps := list.Body["data"].([]any)
			if len(apps) != 2 {
				t.Fatalf("apps left: %s", list.Raw)
			}
			for _, raw := range apps {
				app := raw.(map[string]any)
				if app["name"] != "Keep" {
					continue
				}
				c := app["counts"].(map[string]any)
				if c["licenses"] != float64(3) || c["users"] != float64(1) || c["tokens"] != float64(0) {
					t.Fatalf("counts of the kept app: %v", c)
				}
			}
		})
	})
}

func TestUsers(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		a := api{t, s, o.Token}
		id, _ := a.createApp("Users")
		base := "/api/apps/" + id + "/users"

		t.Run("create validates and hashes", func(t *testing.T) {
			for _, bad := range []map[string]any{
				{"username": "ab", "password": "x"}, {"username": "okname"}, {"username": "okname", "password": "p", "level": -1},
				{"username": "okname", "password": "p", "expiresAt": "tomorrow"}, {"username": "okname", "password": "p", "metadata": []int{1}},
				{"username": "okname", "password": "p", "email": "nope"}, {"username": "okname", "password": "p", "deviceLimit": "2"},
			} {
				expect(t, a.do("POST", base, bad), http.StatusBadRequest, "VALIDATION_ERROR")
			}
			r := a.do("POST", base, map[string]any{"username": "Alice", "password": "pw-123456", "email": "alice@example.com",
				"level": 3, "expiresAt": "2031-01-02T03:04:05Z", "metadata": map[string]any{"tier": "gold"}})
			expectOK(t, r, http.StatusCreated)
			d := r.Data()
			if d["level"] != float64(3) || d["deviceLimit"] != float64(1) || d["expiresAt"] != "2031-01-02T03:04:05.000Z" ||
				d["metadata"].(map[string]any)["tier"] != "gold" || d["password"] != nil || strings.Contains(string(r.Raw), "argon2") {
				t.Fatalf("create: %s", r.Raw)
			}
			expect(t, a.do("POST", base, map[string]any{"username": "alice", "password": "pw"}), http.StatusConflict, "CONFLICT")
		})
		var bobID string
		t.Run("list search, sort, filters", func(t *testing.T) {
			for i, name := range []string{"bob", "carol", "dave"} {
				body := map[string]any{"username": name, "password": "pw-123456", "email": name + "@corp.example"}
				if i == 2 {
					body["expiresAt"] = "2001-01-01T00:00:00Z"
				}
				r := a.do("POST", base, body)
				expectOK(t, r, http.StatusCreated)
				if name == "bob" {
					bobID = r.Data()["id"].(string)
				}
			}
			expectOK(t, a.do("PATCH", base+"/"+bobID, map[string]any{"banned": true, "banReason": "cheating"}), http.StatusOK)
			names := func(q string) []string {
				r := a.do("GET", base+q, nil)
				expectOK(t, r, http.StatusOK)
				var out []string
				for _, u := range r.Data()["users"].([]any) {
					out = append(out, u.(map[string]any)["username"].(string))
				}
				return out
			}
			if got := fmt.Sprint(names("?sortBy=username&sortOrder=desc")); got != "[dave carol bob Alice]" {
				t.Fatalf("sorted: %s", got)
			}
			if got := fmt.Sprint(names("?search=CORP&sortBy=username")); got != "[bob carol dave]" {
				t.Fatalf("search: %s", got)
			}
			if got := fmt.Sprint(names("?banned=true")); got != "[bob]" {
				t.Fatalf("banned: %s", got)
			}
			if got := fmt.Sprint(names("?expired=true")); got != "[dave]" {
				t.Fatalf("expired: %s", got)
			}
			r := a.do("GET", base+"?limit=2&offset=1&sortBy=username", nil)
			if r.Data()["total"] != float64(4) || len(r.Data()["users"].([]any)) != 2 {
				t.Fatalf("page: %s", r.Raw)
			}
			for _, q := range []string{"?sortBy=password", "?sortOrder=sideways", "?limit=201", "?limit=0", "?offset=-1", "?banned=maybe"} {
				expect(t, a.do("GET", base+q, nil), http.StatusBadRequest, "VALIDATION_ERROR")
			}
		})
		t.Run("get with devices and subscriptions, ban reason kept", func(t *testing.T) {
			r := a.do("GET", base+"/"+bobID, nil)
			expectOK(t, r, http.StatusOK)
			if r.Data()["banReason"] != "cheating" || r.Data()["devices"] == nil || r.Data()["subscriptions"] == nil {
				t.Fatalf("get: %s", r.Raw)
			}
			expect(t, a.do("GET", base+"/nope", nil), http.StatusNotFound, "NOT_FOUND")
		})
		t.Run("extend from expiry or from now", func(t *testing.T) {
			r := a.do("POST", base+"/"+bobID+"/extend", map[string]any{"duration": 3600})
			expectOK(t, r, http.StatusOK)
			got, _ := time.Parse(time.RFC3339, r.Data()["expiresAt"].(string))
			if d := time.Until(got); d < 59*time.Minute || d > 61*time.Minute {
				t.Fatalf("from now: %v", got)
			}
			r = a.do("POST", base+"/"+bobID+"/extend", map[string]any{"duration": 3600})
			got2, _ := time.Parse(time.RFC3339, r.Data()["expiresAt"].(string))
			if got2.Sub(got) != time.Hour {
				t.Fatalf("from expiry: %v then %v", got, got2)
			}
			for _, bad := range []any{map[string]any{}, map[string]any{"duration": -5}, map[string]any{"duration": 0}, map[string]any{"duration": "1h"}} {
				expect(t, a.do("POST", base+"/"+bobID+"/extend", bad), http.StatusBadRequest, "VALIDATION_ERROR")
			}
		})
		t.Run("reset HWID honours max and cooldown", func(t *testing.T) {
			expectOK(t, a.do("PATCH", base+"/"+bobID, map[string]any{"hwid": "HW-1", "lockedIp": "1.2.3.4", "hwidResetMax": 2, "hwidResetCooldown": 60}), http.StatusOK)
			r := a.do("POST", base+"/"+bobID+"/reset-hwid", nil)
			expectOK(t, r, http.StatusOK)
			u := a.do("GET", base+"/"+bobID, nil).Data()
			if u["hwid"] != "" || u["lockedIp"] != "" || u["hwidResets"] != float64(1) {
				t.Fatalf("after reset: %v", u)
			}
			r = a.do("POST", base+"/"+bobID+"/reset-hwid", nil)
			expect(t, r, http.StatusTooManyRequests, "RATE_LIMITED")
			s.Clock().Advance(61 * time.Second)
			expectOK(t, a.do("POST", base+"/"+bobID+"/reset-hwid", nil), http.StatusOK)
			s.Clock().Advance(61 * time.Second)
			expect(t, a.do("POST", base+"/"+bobID+"/reset-hwid", nil), http.StatusForbidden, "FORBIDDEN")
		})
		t.Run("IP info is for admins", func(t *testing.T) {
			expect(t, a.do("GET", base+"/"+bobID+"/ip", nil), http.StatusForbidden, "FORBIDDEN")
			role := "admin"
			if _, err := s.Node.Accounts().ChangeAccountByUsername(t.Context(), o.Username, accounts.Change{Role: &role}); err != nil {
				t.Fatal(err)
			}
			r := a.do("GET", base+"/"+bobID+"/ip", nil)
			expectOK(t, r, http.StatusOK)
			if _, ok := r.Data()["lastLoginIp"]; !ok {
				t.Fatalf("ip: %s", r.Raw)
			}
		})
		t.Run("free plan allows 15 users per app", func(t *testing.T) {
			for i := 0; i < 11; i++ {
				expectOK(t, a.do("POST", base, map[string]any{"username": fmt.Sprintf("fill%02d", i), "password": "pw"}), http.StatusCreated)
			}
			r := a.do("POST", base, map[string]any{"username": "one-too-many", "password": "pw"})
			expect(t, r, http.StatusForbidden, "PLAN_LIMIT")
			if !strings.Contains(string(r.Raw), "15") {
				t.Fatalf("limit not named: %s", r.Raw)
			}
		})
		t.Run("delete", func(t *testing.T) {
			expectOK(t, a.do("DELETE", base+"/"+bobID, nil), http.StatusOK)
			expect(t, a.do("GET", base+"/"+bobID, nil), http.StatusNotFound, "NOT_FOUND")
			expect(t, a.do("DELETE", base+"/"+bobID, nil), http.StatusNotFound, "NOT_FOUND")
		})
	})
}

var keyPattern = regexp.MustCompile(`^PRO-[0-9A-HJKMNP-TV-Z]{5}(-[0-9A-HJKMNP-TV-Z]{5}){3}$`)

func TestLicensesAndTokens(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		a := api{t, s, o.Token}
		id, _ := a.createApp("Licensed")
		base := "/api/apps/" + id + "/licenses"

		t.Run("bad input writes nothing", func(t *testing.T) {
			for _, bad := range []map[string]any{{"count": 0}, {"count": 1001}, {"count": 1, "duration": -1},
				{"count": 1, "expiresAt": "2030-13-01"}, {"count": 1, "prefix": "bad prefix"}, {"count": 1, "maxUses": -2},
				{"count": 1, "expiresAt": "2001-01-01T00:00:00Z"}} {
				expect(t, a.do("POST", base, bad), http.StatusBadRequest, "VALIDATION_ERROR")
			}
			if r := a.do("GET", base, nil); r.Data()["total"] != float64(0) {
				t.Fatalf("written: %s", r.Raw)
			}
		})
		var keys []string
		t.Run("create 1000 keys in one request", func(t *testing.T) {
			r := a.do("POST", base, map[string]any{"count": 1000, "prefix": "pro", "level": 2, "maxUses": 1, "duration": 86400, "note": "batch"})
			expectOK(t, r, http.StatusCreated)
			list := r.Data()["licenses"].([]any)
			seen := map[string]bool{}
			for _, l := range list {
				k := l.(map[string]any)["key"].(string)
				if !keyPattern.MatchString(k) || seen[k] {
					t.Fatalf("key %q", k)
				}
				seen[k] = true
				keys = append(keys, k)
			}
			if len(list) != 1000 || a.do("GET", base+"?limit=1", nil).Data()["total"] != float64(1000) {
				t.Fatalf("count: %d", len(list))
			}
		})
		var licID string
		t.Run("list, get, update, verify", func(t *testing.T) {
			r := a.do("GET", base+"?search="+strings.ToLower(keys[7][4:12])+"&sortBy=key", nil)
			expectOK(t, r, http.StatusOK)
			found := r.Data()["licenses"].([]any)
			if len(found) != 1 || found[0].(map[string]any)["key"] != keys[7] {
				t.Fatalf("search: %s", r.Raw)
			}
			licID = found[0].(map[string]any)["id"].(string)
			expectOK(t, a.do("GET", base+"/"+licID, nil), http.StatusOK)
			r = a.do("PATCH", base+"/"+licID, map[string]any{"note": "vip", "banned": true})
			expectOK(t, r, http.StatusOK)
			if r.Data()["note"] != "vip" || r.Data()["level"] != float64(2) {
				t.Fatalf("update: %s", r.Raw)
			}
			expect(t, a.do("POST", base+"/verify", map[string]any{"key": keys[7]}), http.StatusForbidden, "BANNED")
			expect(t, a.do("POST", base+"/verify", map[string]any{"key": "NOPE"}), http.StatusNotFound, "NOT_FOUND")
			v := a.do("POST", base+"/verify", map[string]any{"key": keys[8]})
			expectOK(t, v, http.StatusOK)
			if v.Data()["duration"] != float64(86400) {
				t.Fatalf("verify: %s", v.Raw)
			}
			if r := a.do("GET", base+"?banned=true", nil); r.Data()["total"] != float64(1) {
				t.Fatalf("banned filter: %s", r.Raw)
			}
			for _, q := range []string{"?sortBy=note", "?used=perhaps", "?limit=500"} {
				expect(t, a.do("GET", base+q, nil), http.StatusBadRequest, "VALIDATION_ERROR")
			}
		})
		t.Run("expired keys", func(t *testing.T) {
			r := a.do("POST", base, map[string]any{"count": 2, "expiresAt": time.Now().Add(time.Hour).UTC().Format(time.RFC3339)})
			expectOK(t, r, http.StatusCreated)
			k := r.Data()["licenses"].([]any)[0].(map[string]any)["key"].(string)
			s.Clock().Advance(2 * time.Hour)
			defer s.Clock().Advance(-2 * time.Hour)
			expect(t, a.do("POST", base+"/verify", map[string]any{"key": k}), http.StatusForbidden, "EXPIRED")
			if r := a.do("GET", base+"?expired=true", nil); r.Data()["total"] != float64(2) {
				t.Fatalf("expired filter: %s", r.Raw)
			}
			r = a.do("POST", base+"/bulk-delete", map[string]any{"filter": "expired"})
			expectOK(t, r, http.StatusOK)
			if r.Data()["deleted"] != float64(2) {
				t.Fatalf("bulk expired: %s", r.Raw)
			}
		})
		t.Run("bulk delete", func(t *testing.T) {
			expect(t, a.do("POST", base+"/bulk-delete", map[string]any{}), http.StatusBadRequest, "VALIDATION_ERROR")
			expect(t, a.do("POST", base+"/bulk-delete", map[string]any{"filter": "all"}), http.StatusBadRequest, "VALIDATION_ERROR")
			r := a.do("POST", base+"/bulk-delete", map[string]any{"filter": "banned"})
			if r.Data()["deleted"] != float64(1) {
				t.Fatalf("bulk banned: %s", r.Raw)
			}
			list := a.do("GET", base+"?limit=3", nil).Data()["licenses"].([]any)
			ids := []string{list[0].(map[string]any)["id"].(string), list[1].(map[string]any)["id"].(string), "unknown-id"}
			r = a.do("POST", base+"/bulk-delete", map[string]any{"ids": ids})
			if r.Data()["deleted"] != float64(2) || a.do("GET", base+"?limit=1", nil).Data()["total"] != float64(997) {
				t.Fatalf("bulk ids: %s", r.Raw)
			}
			expectOK(t, a.do("DELETE", base+"/"+list[2].(map[string]any)["id"].(string), nil), http.StatusOK)
			expect(t, a.do("DELETE", base+"/"+licID, nil), http.StatusNotFound, "NOT_FOUND")
		})
		t.Run("license user info is for admins", func(t *testing.T) {
			expect(t, a.do("GET", base+"/"+licID+"/user", nil), http.StatusForbidden, "FORBIDDEN")
		})
		t.Run("tokens", func(t *testing.T) {
			tb := "/api/apps/" + id + "/tokens"
			for _, bad := range []map[string]any{{"count": 0}, {"count": 501}, {"count": 1, "maxUses": -1}, {"count": 1, "expiresAt": "soon"}} {
				expect(t, a.do("POST", tb, bad), http.StatusBadRequest, "VALIDATION_ERROR")
			}
			r := a.do("POST", tb, map[string]any{"count": 500, "maxUses": 3, "note": "beta"})
			expectOK(t, r, http.StatusCreated)
			seen := map[string]bool{}
			for _, raw := range r.Data()["tokens"].([]any) {
				v := raw.(map[string]any)["token"].(string)
				if len(v) < 32 || seen[v] {
					t.Fatalf("token %q", v)
				}
				seen[v] = true
			}
			first := r.Data()["tokens"].([]any)[0].(map[string]any)["id"].(string)
			r = a.do("PATCH", tb+"/"+first, map[string]any{"enabled": false, "note": "off"})
			expectOK(t, r, http.StatusOK)
			if r.Data()["enabled"] != false || r.Data()["maxUses"] != float64(3) {
				t.Fatalf("update token: %s", r.Raw)
			}
			if l := a.do("GET", tb+"?limit=10", nil); l.Data()["total"] != float64(500) {
				t.Fatalf("list tokens: %s", l.Raw)
			}
			expectOK(t, a.do("DELETE", tb+"/"+first, nil), http.StatusOK)
			expect(t, a.do("DELETE", tb+"/"+first, nil), http.StatusNotFound, "NOT_FOUND")
		})
		t.Run("devices", func(t *testing.T) {
			r := a.do("GET", "/api/apps/"+id+"/devices?search=x", nil)
			expectOK(t, r, http.StatusOK)
			if r.Data()["total"] != float64(0) {
				t.Fatalf("devices: %s", r.Raw)
			}
			expect(t, a.do("DELETE", "/api/apps/"+id+"/devices/nope", nil), http.StatusNotFound, "NOT_FOUND")
		})
		t.Run("stats", func(t *testing.T) {
			a.do("POST", "/api/apps/"+id+"/users", map[string]any{"username": "statuser", "password": "pw"})
			r := a.do("GET", "/api/apps/"+id+"/stats", nil)
			expectOK(t, r, http.StatusOK)
			d := r.Data()
			if d["users"].(map[string]any)["total"] != float64(1) || d["users"].(map[string]any)["active"] != float64(1) ||
				d["licenses"].(map[string]any)["total"] != float64(996) || d["licenses"].(map[string]any)["unused"] != float64(996) {
				t.Fatalf("stats: %s", r.Raw)
			}
			for _, k := range []string{"sessions", "logins"} {
				if _, ok := d[k]; !ok {
					t.Fatalf("stats lack %s: %s", k, r.Raw)
				}
			}
		})
	})
}
