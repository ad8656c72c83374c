package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	ts "github.com/keyward/keyward/internal/testserver"
)

// withKey calls the API with a scoped or account key.
func withKey(t *testing.T, s *ts.Server, key, method, path string, body any) ts.Response {
	t.Helper()
	return s.Do(t, ts.Req{Method: method, Path: path, APIKey: key, Body: body, IP: "198.51.100.20"})
}

// expectScopeDenied wants 403 SCOPE_DENIED whose message names scope.
func expectScopeDenied(t *testing.T, r ts.Response, scope string) {
	t.Helper()
	expect(t, r, http.StatusForbidden, "SCOPE_DENIED")
	if msg := r.Body["error"].(map[string]any)["message"].(string); !strings.Contains(msg, scope) {
		t.Fatalf("message %q does not name %q", msg, scope)
	}
}

func listKeys(t *testing.T, a api) []map[string]any {
	t.Helper()
	r := a.do("GET", "/api/auth/api-keys", nil)
	expectOK(t, r, http.StatusOK)
	var out []map[string]any
	for _, v := range r.Body["data"].([]any) {
		out = append(out, v.(map[string]any))
	}
	return out
}

func TestScopedAPIKeys(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		setPlan(t, s, o.Username, "pro")
		a := api{t, s, o.Token}
		appID, _ := a.createApp("Shop")
		otherApp, _ := a.createApp("Other")

		r := a.do("POST", "/api/auth/api-keys", map[string]any{"name": "shop", "scopes": []string{"licenses:create", "users:read"}, "apps": []string{appID}})
		expectOK(t, r, http.StatusCreated)
		key := r.Data()["key"].(string)
		keyID := r.Data()["id"].(string)
		if !strings.HasPrefix(key, "kws_") || r.Data()["maskedKey"] != key[:8]+"..."+key[len(key)-4:] {
			t.Fatalf("create reply: %s", r.Raw)
		}

		t.Run("bad input is refused and changes nothing", func(t *testing.T) {
			for _, body := range []map[string]any{
				{"name": "", "scopes": []string{"read"}},
				{"name": "x", "scopes": []string{}},
				{"name": "x", "scopes": []string{"licenses:fly"}},
				{"name": "x", "scopes": []string{"account:credentials"}},
				{"name": "x", "scopes": []string{"read"}, "apps": []string{"no-such-app"}},
				{"name": "x", "scopes": []string{"read"}, "expiresAt": "yesterday"},
				{"name": "x", "scopes": []string{"read"}, "expiresAt": "2001-01-01T00:00:00Z"},
			} {
				expect(t, a.do("POST", "/api/auth/api-keys", body), http.StatusBadRequest, "VALIDATION_ERROR")
			}
			if n := len(listKeys(t, a)); n != 1 {
				t.Fatalf("%d keys after refused creates", n)
			}
		})

		t.Run("within its scopes and app", func(t *testing.T) {
			expectOK(t, withKey(t, s, key, "POST", "/api/apps/"+appID+"/licenses", map[string]any{"count": 1}), http.StatusCreated)
			expectOK(t, withKey(t, s, key, "GET", "/api/apps/"+appID+"/users", nil), http.StatusOK)
			expectOK(t, withKey(t, s, key, "GET", "/api/auth/me", nil), http.StatusOK)
		})
		t.Run("outside its scopes: SCOPE_DENIED naming the scope", func(t *testing.T) {
			expectScopeDenied(t, withKey(t, s, key, "GET", "/api/apps/"+appID+"/licenses", nil), "licenses:read")
			expectScopeDenied(t, withKey(t, s, key, "POST", "/api/apps/"+appID+"/users", map[string]any{"username": "u1", "password": "pw-123456"}), "users:create")
			expectScopeDenied(t, withKey(t, s, key, "DELETE", "/api/apps/"+appID, nil), "apps:delete")
		})
		t.Run("outside its apps", func(t *testing.T) {
			expectScopeDenied(t, withKey(t, s, key, "POST", "/api/apps/"+otherApp+"/licenses", map[string]any{"count": 1}), otherApp)
		})
		t.Run("never credential routes", func(t *testing.T) {
			full := a.do("POST", "/api/auth/api-keys", map[string]any{"name": "everything", "scopes": []string{"full"}})
			expectOK(t, full, http.StatusCreated)
			fullKey := full.Data()["key"].(string)
			for _, rt := range [][2]string{{"POST", "/api/auth/change-password"}, {"POST", "/api/auth/api-key/regenerate"},
				{"POST", "/api/auth/2fa/setup"}, {"POST", "/api/auth/plan"}, {"GET", "/api/auth/api-keys"},
				{"POST", "/api/auth/api-keys"}, {"DELETE", "/api/auth/api-keys/" + keyID}} {
				expectScopeDenied(t, withKey(t, s, fullKey, rt[0], rt[1], map[string]any{}), "account:credentials")
			}
			// The full key does everything else, on every app.
			expectOK(t, withKey(t, s, fullKey, "GET", "/api/apps/"+otherApp+"/licenses", nil), http.StatusOK)
			// The account key of the specification still manages keys.
			me := a.do("POST", "/api/auth/api-key/regenerate", nil)
			expectOK(t, me, http.StatusOK)
			expectOK(t, withKey(t, s, me.Data()["apiKey"].(string), "GET", "/api/auth/api-keys", nil), http.StatusOK)
			expectOK(t, a.do("DELETE", "/api/auth/api-keys/"+full.Data()["id"].(string), nil), http.StatusOK)
		})
		t.Run("list is masked with last use", func(t *testing.T) {
			list := listKeys(t, a)
			if len(list) != 1 || list[0]["id"] != keyID || list[0]["key"] != nil || list[0]["lastUsedIp"] != "198.51.100.20" || list[0]["lastUsedAt"] == nil {
				t.Fatalf("list: %v", list)
			}
			if strings.Contains(string(a.do("GET", "/api/auth/api-keys", nil).Raw), key) {
				t.Fatal("the full key is listed")
			}
		})
		t.Run("update narrows the key at once", func(t *testing.T) {
			r := a.do("PATCH", "/api/auth/api-keys/"+keyID, map[string]any{"scopes": []string{"read"}, "apps": []string{}})
			expectOK(t, r, http.StatusOK)
			if r.Data()["name"] != "shop" {
				t.Fatalf("name lost: %s", r.Raw)
			}
			expectScopeDenied(t, withKey(t, s, key, "POST", "/api/apps/"+appID+"/licenses", map[string]any{"count": 1}), "licenses:create")
			expectOK(t, withKey(t, s, key, "GET", "/api/apps/"+otherApp+"/licenses", nil), http.StatusOK)
			expect(t, a.do("PATCH", "/api/auth/api-keys/nope", map[string]any{"name": "x"}), http.StatusNotFound, "NOT_FOUND")
		})
		t.Run("expiry", func(t *testing.T) {
			at := s.Clock().Now().Add(time.Hour).UTC().Format(time.RFC3339)
			expectOK(t, a.do("PATCH", "/api/auth/api-keys/"+keyID, map[string]any{"expiresAt": at}), http.StatusOK)
			expectOK(t, withKey(t, s, key, "GET", "/api/auth/me", nil), http.StatusOK)
			s.Clock().Advance(2 * time.Hour)
			expect(t, withKey(t, s, key, "GET", "/api/auth/me", nil), http.StatusUnauthorized, "UNAUTHORIZED")
			expectOK(t, a.do("PATCH", "/api/auth/api-keys/"+keyID, map[string]any{"expiresAt": ""}), http.StatusOK)
			expectOK(t, withKey(t, s, key, "GET", "/api/auth/me", nil), http.StatusOK)
		})
		t.Run("revoke", func(t *testing.T) {
			expectOK(t, a.do("DELETE", "/api/auth/api-keys/"+keyID, nil), http.StatusOK)
			expect(t, withKey(t, s, key, "GET", "/api/auth/me", nil), http.StatusUnauthorized, "UNAUTHORIZED")
			expect(t, a.do("DELETE", "/api/auth/api-keys/"+keyID, nil), http.StatusNotFound, "NOT_FOUND")
		})
		t.Run("plan limit", func(t *testing.T) {
			o2 := newOwner(t, s)
			a2 := api{t, s, o2.Token}
			for range 2 {
				expectOK(t, a2.do("POST", "/api/auth/api-keys", map[string]any{"name": "k", "scopes": []string{"read"}}), http.StatusCreated)
			}
			expect(t, a2.do("POST", "/api/auth/api-keys", map[string]any{"name": "k", "scopes": []string{"read"}}), http.StatusForbidden, "PLAN_LIMIT")
			// Another account's key is not found.
			expect(t, a2.do("DELETE", "/api/auth/api-keys/"+keyID, nil), http.StatusNotFound, "NOT_FOUND")
		})
	})
}

// TestScopedKeyRevokedOnEveryNode: a key revoked on one node is refused by the other at
// the next request (no node caches keys).
func TestScopedKeyRevokedOnEveryNode(t *testing.T) {
	env := ts.Env(t, ts.Engines{Name: "mongo+redis", Mongo: true, Redis: true})
	a := ts.StartEnv(t, env)
	b := ts.StartEnv(t, env)
	o := newOwner(t, a)
	r := a.Do(t, ts.Req{Method: "POST", Path: "/api/auth/api-keys", Token: o.Token, Body: map[string]any{"name": "bot", "scopes": []string{"read"}}})
	expectOK(t, r, http.StatusCreated)
	key := r.Data()["key"].(string)
	expectOK(t, withKey(t, b, key, "GET", "/api/apps", nil), http.StatusOK)
	expectOK(t, a.Do(t, ts.Req{Method: "DELETE", Path: "/api/auth/api-keys/" + r.Data()["id"].(string), Token: o.Token}), http.StatusOK)
	expect(t, withKey(t, b, key, "GET", "/api/apps", nil), http.StatusUnauthorized, "UNAUTHORIZED")
	expect(t, withKey(t, a, key, "GET", "/api/apps", nil), http.StatusUnauthorized, "UNAUTHORIZED")
}
