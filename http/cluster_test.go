package httpapi_test

import (
	"net/http"
	"testing"

	ts "github.com/keyward/keyward/internal/testserver"
)

// TestTwoNodesShareLimitsAndRevocations runs two nodes on one MongoDB-wire database and one
// Redis: what one node counts or revokes, the other enforces.
func TestTwoNodesShareLimitsAndRevocations(t *testing.T) {
	env := ts.Env(t, ts.Engines{Name: "mongo+redis", Mongo: true, Redis: true})
	a := ts.StartEnv(t, env)
	b := ts.StartEnv(t, env)
	o := newOwner(t, a)

	t.Run("a token from one node works on the other", func(t *testing.T) {
		expectOK(t, b.Do(t, ts.Req{Method: "GET", Path: "/api/auth/me", Token: o.Token}), http.StatusOK)
	})
	t.Run("logout on one node is refused on the other", func(t *testing.T) {
		token := login(t, b, o.Username, o.Password, "").Data()["token"].(string)
		expectOK(t, a.Do(t, ts.Req{Method: "POST", Path: "/api/auth/logout", Token: token}), http.StatusOK)
		expect(t, b.Do(t, ts.Req{Method: "GET", Path: "/api/auth/me", Token: token}), http.StatusUnauthorized, "UNAUTHORIZED")
	})
	t.Run("login limit counts across nodes", func(t *testing.T) {
		ip := nextIP()
		for i := 0; i < 5; i++ {
			node := []*ts.Server{a, b}[i%2]
			r := node.Do(t, ts.Req{Method: "POST", Path: "/api/auth/login", IP: ip, Body: map[string]string{"username": o.Username, "password": "Wrong-Password-1"}})
			expect(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
		}
		for _, node := range []*ts.Server{a, b} {
			r := node.Do(t, ts.Req{Method: "POST", Path: "/api/auth/login", IP: ip, Body: map[string]string{"username": o.Username, "password": o.Password}})
			expect(t, r, http.StatusTooManyRequests, "RATE_LIMITED")
		}
	})
	t.Run("register limit counts across nodes", func(t *testing.T) {
		ip := nextIP()
		for i := 0; i < 3; i++ {
			node := []*ts.Server{a, b}[i%2]
			expectOK(t, node.Do(t, ts.Req{Method: "POST", Path: "/api/auth/register", IP: ip,
				Body: map[string]string{"email": "x@example.com", "username": "xnode", "password": goodPassword}}), http.StatusAccepted)
		}
		expect(t, b.Do(t, ts.Req{Method: "POST", Path: "/api/auth/register", IP: ip,
			Body: map[string]string{"email": "y@example.com", "username": "ynode", "password": goodPassword}}), http.StatusTooManyRequests, "RATE_LIMITED")
	})
	t.Run("a password change on one node revokes tokens on the other", func(t *testing.T) {
		token := login(t, a, o.Username, o.Password, "").Data()["token"].(string)
		r := b.Do(t, ts.Req{Method: "POST", Path: "/api/auth/change-password", Token: o.Token,
			Body: map[string]string{"currentPassword": o.Password, "newPassword": "Cluster-Pass-9"}})
		expectOK(t, r, http.StatusOK)
		expect(t, a.Do(t, ts.Req{Method: "GET", Path: "/api/auth/me", Token: token}), http.StatusUnauthorized, "UNAUTHORIZED")
	})
}
