package httpapi_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	ts "github.com/keyward/keyward/internal/testserver"
)

// wipeClusterEngine gives the next node a fresh cluster engine: the memory engine is fresh
// in every process anyway; on Redis every key of the node's prefix is deleted (what a
// restart without persistence or FLUSHALL does, kept to this test's keys because other
// tests share the Redis server).
func wipeClusterEngine(t *testing.T, env map[string]string) {
	t.Helper()
	url := env["KEYWARD_REDIS_URL"]
	if url == "" {
		return
	}
	opts, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	rdb := goredis.NewClient(opts)
	defer rdb.Close()
	ctx := context.Background()
	iter := rdb.Scan(ctx, 0, env["KEYWARD_REDIS_PREFIX"]+"*", 1000).Iterator()
	deleted := 0
	for iter.Next(ctx) {
		if err := rdb.Del(ctx, iter.Val()).Err(); err != nil {
			t.Fatal(err)
		}
		deleted++
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	if deleted == 0 {
		t.Fatal("no key of the node in Redis: the test does not wipe what the node wrote")
	}
}

// TestLogoutAndPasswordCutOffSurviveAFreshClusterEngine logs out one token and changes
// the password under another, then starts a node on the same storage with a fresh cluster
// engine: both tokens stay refused, and the token from the password change still works.
func TestLogoutAndPasswordCutOffSurviveAFreshClusterEngine(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		env := ts.Env(t, e)
		s := ts.StartEnv(t, env)
		me := func(s *ts.Server, token string) ts.Response {
			return s.Do(t, ts.Req{Method: "GET", Path: "/api/auth/me", Token: token})
		}
		o := newOwner(t, s)
		loggedOut := login(t, s, o.Username, o.Password, "").Data()["token"].(string)
		kept := login(t, s, o.Username, o.Password, "").Data()["token"].(string)
		expectOK(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/logout", Token: loggedOut}), http.StatusOK)
		expect(t, me(s, loggedOut), http.StatusUnauthorized, "UNAUTHORIZED")

		other := newOwner(t, s)
		beforeChange := other.Token
		r := s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/change-password", Token: other.Token,
			Body: map[string]string{"currentPassword": other.Password, "newPassword": "Changed-Pass-9"}})
		expectOK(t, r, http.StatusOK)
		afterChange := r.Data()["token"].(string)

		s.Stop()
		wipeClusterEngine(t, env)
		s = ts.StartEnv(t, env)
		expect(t, me(s, loggedOut), http.StatusUnauthorized, "UNAUTHORIZED")
		expect(t, me(s, beforeChange), http.StatusUnauthorized, "UNAUTHORIZED")
		expectOK(t, me(s, kept), http.StatusOK)
		expectOK(t, me(s, afterChange), http.StatusOK)
		// A logout on the new node holds as well.
		expectOK(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/logout", Token: kept}), http.StatusOK)
		expect(t, me(s, kept), http.StatusUnauthorized, "UNAUTHORIZED")

		// Revocations go once their tokens have expired (the JWT lifetime is 24 h).
		if n, err := s.Node.Accounts().PurgeRevocations(t.Context()); err != nil || n != 0 {
			t.Fatalf("purge before expiry = %d, %v; want 0", n, err)
		}
		s.Clock().Advance(25 * time.Hour)
		if n, err := s.Node.Accounts().PurgeRevocations(t.Context()); err != nil || n != 2 {
			t.Fatalf("purge after expiry = %d, %v; want the 2 logouts", n, err)
		}
	})
}
