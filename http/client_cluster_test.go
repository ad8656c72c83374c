package httpapi_test

import (
	"net/http"
	"testing"

	ts "github.com/keyward/keyward/internal/testserver"
)

// TestClientSessionsAcrossNodes runs the client API on two nodes sharing MongoDB and Redis,
// as behind a load balancer: a session, its nonces and its limits are the cluster's, and
// a dashboard change on one node reaches the other node's app actor through the bus.
func TestClientSessionsAcrossNodes(t *testing.T) {
	env := ts.Env(t, ts.Engines{Name: "mongo+redis", Mongo: true, Redis: true})
	a := ts.StartEnv(t, env)
	b := ts.StartEnv(t, env)
	dash := api{t, a, newOwner(t, a).Token}
	appID, secret := dash.createApp("Cluster")

	onA := newSDK(t, a, secret)
	onA.mustInit()
	onB := &sdk{t: t, s: b, ip: onA.ip, secret: secret, token: onA.token} // same program, other node

	// A nonce from one node is good, once, on the other.
	n := onA.nonce()
	expectOK(t, onB.post("register", map[string]any{"username": "erin", "password": "pw-erin-1"}, n), http.StatusOK)
	expect(t, onA.post("heartbeat", nil, n), http.StatusUnauthorized, "NONCE_REQUIRED")
	r := onA.post("check", nil, "")
	expectOK(t, r, http.StatusOK)
	if r.Data()["username"] != "erin" {
		t.Fatalf("login on B is not seen on A: %s", r.Raw)
	}

	// Node B answers from its actor's snapshot; a pause made on node A reaches it.
	other := newSDK(t, b, secret)
	other.mustInit()
	expectOK(t, dash.do("PATCH", "/api/apps/"+appID, map[string]any{"paused": true}), http.StatusOK)
	waitFor(t, func() bool {
		return other.withNonce("login", map[string]any{"username": "erin", "password": "pw-erin-1"}).Code() == "APP_PAUSED"
	})

	// Ending the session on B ends it on A.
	expectOK(t, onB.post("end", nil, ""), http.StatusOK)
	expect(t, onA.post("check", nil, ""), http.StatusUnauthorized, "UNAUTHORIZED")

	// The per-IP client limit counts on both nodes together.
	ip := nextIP()
	hits := 0
	for i := 0; ; i++ {
		node := []*ts.Server{a, b}[i%2]
		r := node.Do(t, ts.Req{Method: "POST", Path: "/api/client/check", IP: ip, Body: map[string]any{"sessionToken": "x"}})
		if r.Code() == "RATE_LIMITED" {
			if r.Header.Get("Retry-After") == "" {
				t.Fatal("429 without Retry-After")
			}
			break
		}
		hits++
		if hits > 60 {
			t.Fatalf("more than 60 calls per minute from one IP across two nodes")
		}
	}
	if hits != 60 {
		t.Fatalf("the limit allowed %d calls, want 60", hits)
	}
}
