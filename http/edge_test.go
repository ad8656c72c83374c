package httpapi_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	ts "github.com/keyward/keyward/internal/testserver"
)

// TestEnvelopeConventions checks the wire rules every route shares.
func TestEnvelopeConventions(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)

		t.Run("unknown route is a 404 envelope with a request id", func(t *testing.T) {
			r := s.Do(t, ts.Req{Method: "GET", Path: "/api/nothing-here"})
			expect(t, r, http.StatusNotFound, "NOT_FOUND")
			if r.Header.Get("X-Request-Id") == "" {
				t.Fatal("no X-Request-Id")
			}
		})
		t.Run("wrong method is a 405 envelope", func(t *testing.T) {
			expect(t, s.Do(t, ts.Req{Method: "DELETE", Path: "/api/auth/login"}), http.StatusMethodNotAllowed, "METHOD_NOT_ALLOWED")
		})
		t.Run("incoming request id is echoed", func(t *testing.T) {
			r := s.Do(t, ts.Req{Method: "GET", Path: "/healthz", Header: map[string]string{"X-Request-Id": "abc-123"}})
			if got := r.Header.Get("X-Request-Id"); got != "abc-123" {
				t.Fatalf("X-Request-Id %q", got)
			}
		})
		t.Run("success puts success first and data always", func(t *testing.T) {
			r := s.Do(t, ts.Req{Method: "GET", Path: "/api/plans"})
			expectOK(t, r, http.StatusOK)
			if !bytes.HasPrefix(r.Raw, []byte(`{"success":true,"data":`)) {
				t.Fatalf("envelope order: %s", r.Raw)
			}
		})
		t.Run("malformed JSON", func(t *testing.T) {
			r := s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/login", Body: `{"username":`})
			expect(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
		})
		t.Run("wrong type names the field", func(t *testing.T) {
			r := s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/login", Body: `{"username":42,"password":"x"}`})
			expect(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
			if !strings.Contains(string(r.Raw), "username") {
				t.Fatalf("field not named: %s", r.Raw)
			}
		})
		t.Run("non-object body", func(t *testing.T) {
			expect(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/login", Body: `[1,2]`}), http.StatusBadRequest, "VALIDATION_ERROR")
		})
		t.Run("two JSON values", func(t *testing.T) {
			expect(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/login", Body: `{} {}`}), http.StatusBadRequest, "VALIDATION_ERROR")
		})
		t.Run("unknown content type", func(t *testing.T) {
			r := s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/login", Body: "username=a", ContentType: "application/x-www-form-urlencoded"})
			expect(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
		})
		t.Run("oversized body is 413", func(t *testing.T) {
			big := `{"username":"` + strings.Repeat("a", 2<<20) + `"}`
			expect(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/login", Body: big}), http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE")
		})
		t.Run("no HTML escaping", func(t *testing.T) {
			r := s.Do(t, ts.Req{Method: "GET", Path: "/api/x<&>y"})
			if !strings.Contains(string(r.Raw), "<&>") {
				t.Fatalf("escaped: %s", r.Raw)
			}
		})
	})
}

// TestClientIPFromTrustedProxiesOnly checks that X-Forwarded-For is believed only from a
// trusted peer: with no trusted proxy, a client cannot dodge a per-IP limit by lying.
func TestClientIPFromTrustedProxiesOnly(t *testing.T) {
	env := ts.Env(t, ts.Pairs[0])
	delete(env, "KEYWARD_TRUSTED_PROXIES")
	s := ts.StartEnv(t, env)
	body := map[string]string{"email": "a@example.com"}
	for i := 0; i < 2; i++ {
		expectOK(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/forgot-password", IP: nextIP(), Body: body}), http.StatusOK)
	}
	// Forgot password allows 2 per 24 h per IP: a third from a "different" forwarded address
	// still comes from the same untrusted peer.
	expect(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/forgot-password", IP: nextIP(), Body: body}), http.StatusTooManyRequests, "RATE_LIMITED")

	trusted := ts.Start(t, ts.Pairs[0])
	for i := 0; i < 3; i++ {
		expectOK(t, trusted.Do(t, ts.Req{Method: "POST", Path: "/api/auth/forgot-password", IP: nextIP(), Body: body}), http.StatusOK)
	}
}

func TestAuthorizationForms(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		foreign, _ := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.RegisteredClaims{Subject: o.ID, ID: "x", Issuer: "keyward",
			IssuedAt: jwt.NewNumericDate(time.Now()), ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))}).
			SignedString([]byte(strings.Repeat("k", 40)))
		none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, jwt.RegisteredClaims{Subject: o.ID, ID: "x", Issuer: "keyward",
			IssuedAt: jwt.NewNumericDate(time.Now()), ExpiresAt: jwt.NewNumericDate(time.Now().Add(time.Hour))}).
			SignedString(jwt.UnsafeAllowNoneSignatureType)
		cases := map[string]string{
			"missing":         "",
			"basic":           "Basic dXNlcjpwYXNz",
			"bearer no token": "Bearer ",
			"garbage":         "Bearer not.a.jwt",
			"foreign signed":  "Bearer " + foreign,
			"alg none":        "Bearer " + none,
		}
		for name, header := range cases {
			t.Run(name, func(t *testing.T) {
				r := s.Do(t, ts.Req{Method: "GET", Path: "/api/auth/me", Header: map[string]string{"Authorization": header}})
				expect(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
			})
		}
		t.Run("expired", func(t *testing.T) {
			s.Clock().Advance(25 * time.Hour)
			defer s.Clock().Advance(-25 * time.Hour)
			expect(t, s.Do(t, ts.Req{Method: "GET", Path: "/api/auth/me", Token: o.Token}), http.StatusUnauthorized, "UNAUTHORIZED")
		})
		t.Run("valid", func(t *testing.T) {
			expectOK(t, s.Do(t, ts.Req{Method: "GET", Path: "/api/auth/me", Token: o.Token}), http.StatusOK)
		})
	})
}

func TestOperationsEndpoints(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		expectOK(t, s.Do(t, ts.Req{Method: "GET", Path: "/healthz"}), http.StatusOK)
		r := s.Do(t, ts.Req{Method: "GET", Path: "/readyz"})
		expectOK(t, r, http.StatusOK)
		if r.Data()["storage"] != "ok" || r.Data()["cluster"] != "ok" {
			t.Fatalf("readyz: %s", r.Raw)
		}
		s.Do(t, ts.Req{Method: "GET", Path: "/api/plans"})
		resp, err := http.Get(s.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		text, _ := io.ReadAll(resp.Body)
		for _, want := range []string{`keyward_http_requests_total{method="GET",route="/api/plans",status="200"}`,
			`keyward_http_request_duration_seconds_bucket{method="GET",route="/api/plans",status="200"`} {
			if !strings.Contains(string(text), want) {
				t.Fatalf("metrics lack %s", want)
			}
		}
	})
}
