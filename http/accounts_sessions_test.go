package httpapi_test

import (
	"crypto/sha1" //nolint:gosec // the range protocol's hash
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	ts "github.com/keyward/keyward/internal/testserver"
)

// refreshCookieOf answers the kw_refresh cookie a reply sets, failing the test without one.
func refreshCookieOf(t *testing.T, r ts.Response) *http.Cookie {
	t.Helper()
	for _, c := range (&http.Response{Header: r.Header}).Cookies() {
		if c.Name == "kw_refresh" {
			return c
		}
	}
	t.Fatalf("no kw_refresh cookie in %v", r.Header)
	return nil
}

func refresh(t *testing.T, s *ts.Server, cookie string, header bool) ts.Response {
	h := map[string]string{"Cookie": "kw_refresh=" + cookie}
	if header {
		h["X-Keyward-Refresh"] = "1"
	}
	return s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/refresh", Header: h})
}

// rangeServer answers the k-anonymity range protocol for the passwords given, and counts
// the prefixes it was asked (never anything longer than five characters).
func rangeServer(t *testing.T, breached ...string) (*httptest.Server, *atomic.Int64) {
	var asked atomic.Int64
	list := map[string][]string{}
	for _, p := range breached {
		sum := sha1.Sum([]byte(p)) //nolint:gosec // the protocol's hash
		h := strings.ToUpper(hex.EncodeToString(sum[:]))
		list[h[:5]] = append(list[h[:5]], h[5:]+":42")
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		asked.Add(1)
		prefix := strings.TrimPrefix(r.URL.Path, "/range/")
		if len(prefix) != 5 {
			t.Errorf("range asked for %q, want 5 hex digits", prefix)
		}
		// A padding line (count 0) and a near miss.
		fmt.Fprintf(w, "%s:0\r\n", strings.Repeat("0", 35))
		for _, l := range list[prefix] {
			fmt.Fprintf(w, "%s\r\n", l)
		}
	}))
	t.Cleanup(srv.Close)
	return srv, &asked
}

func TestOwnerSessions(t *testing.T) {
	ranges, asked := rangeServer(t, "Password-1234", "Breached-Pass-1")
	env := ts.Env(t, ts.Pairs[0])
	env["KEYWARD_BREACH_RANGE_URL"] = ranges.URL + "/range/"
	s := ts.StartEnv(t, env)
	me := func(token string) ts.Response {
		return s.Do(t, ts.Req{Method: "GET", Path: "/api/auth/me", Token: token})
	}

	t.Run("sign-in sets a refresh cookie only the refresh route gets", func(t *testing.T) {
		o := newOwner(t, s)
		r := login(t, s, o.Username, o.Password, "")
		expectOK(t, r, http.StatusOK)
		c := refreshCookieOf(t, r)
		if !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/api/auth/refresh" || c.Secure {
			t.Fatalf("cookie %+v: want HttpOnly, SameSite=Strict, Path=/api/auth/refresh, not Secure without TLS", c)
		}
		// Without the header a cross-site form could not send, the cookie alone does nothing.
		expect(t, refresh(t, s, c.Value, false), http.StatusForbidden, "FORBIDDEN")
		expect(t, refresh(t, s, c.Value+"x", true), http.StatusUnauthorized, "UNAUTHORIZED")
		s.Clock().Advance(time.Hour)
		defer s.Clock().Advance(-time.Hour)
		rr := refresh(t, s, c.Value, true)
		expectOK(t, rr, http.StatusOK)
		fresh := rr.Data()["token"].(string)
		expectOK(t, me(fresh), http.StatusOK)
		exp, err := time.Parse(time.RFC3339, rr.Data()["expiresAt"].(string))
		if err != nil || exp.Before(s.Clock().Now().Add(23*time.Hour)) {
			t.Fatalf("refreshed expiry %v (%v): want a day from now", rr.Data()["expiresAt"], err)
		}
		// Sign-out ends the refresh too.
		expectOK(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/logout", Token: fresh}), http.StatusOK)
		expect(t, refresh(t, s, c.Value, true), http.StatusUnauthorized, "UNAUTHORIZED")
		expect(t, me(r.Data()["token"].(string)), http.StatusUnauthorized, "UNAUTHORIZED")
	})

	t.Run("sessions are listed and signed out one or all others", func(t *testing.T) {
		o := newOwner(t, s)
		second := s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/login", IP: "198.51.100.9",
			Header: map[string]string{"User-Agent": "Mozilla/5.0 Firefox/133.0"}, Body: map[string]string{"username": o.Username, "password": o.Password}})
		expectOK(t, second, http.StatusOK)
		third := login(t, s, o.Username, o.Password, "").Data()["token"].(string)
		// A browser and address not seen before is mailed to the owner.
		mail := s.WaitMail(t, o.Email, "New sign-in to your Keyward account")
		if !strings.Contains(mail, "198.51.100.9") || !strings.Contains(mail, "Firefox/133.0") || !strings.Contains(mail, "/account/sessions") {
			t.Fatalf("new sign-in mail lacks the address, browser or link:\n%s", mail)
		}
		list := s.Do(t, ts.Req{Method: "GET", Path: "/api/auth/sessions", Token: o.Token})
		expectOK(t, list, http.StatusOK)
		rows, _ := list.Body["data"].([]any)
		if len(rows) != 3 {
			t.Fatalf("%d sessions listed, want 3: %s", len(rows), list.Raw)
		}
		var firefox string
		current := 0
		for _, x := range rows {
			row := x.(map[string]any)
			if row["current"] == true {
				current++
			}
			if row["ip"] == "198.51.100.9" && row["userAgent"] == "Mozilla/5.0 Firefox/133.0" {
				firefox = row["id"].(string)
			}
			if row["createdAt"] == nil || row["lastUsedAt"] == nil {
				t.Fatalf("session without first or last use: %v", row)
			}
		}
		if current != 1 || firefox == "" {
			t.Fatalf("want one current session and the Firefox one: %s", list.Raw)
		}
		expectOK(t, s.Do(t, ts.Req{Method: "DELETE", Path: "/api/auth/sessions/" + firefox, Token: o.Token}), http.StatusOK)
		expect(t, me(second.Data()["token"].(string)), http.StatusUnauthorized, "UNAUTHORIZED")
		expect(t, s.Do(t, ts.Req{Method: "DELETE", Path: "/api/auth/sessions/" + firefox, Token: o.Token}), http.StatusNotFound, "NOT_FOUND")
		// Another account cannot sign this one's sessions out.
		other := newOwner(t, s)
		expect(t, s.Do(t, ts.Req{Method: "DELETE", Path: "/api/auth/sessions/" + firefox, Token: other.Token}), http.StatusNotFound, "NOT_FOUND")

		r := s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/sessions/revoke-others", Token: o.Token})
		expectOK(t, r, http.StatusOK)
		if r.Data()["count"] != float64(1) {
			t.Fatalf("revoke-others: %s, want count 1", r.Raw)
		}
		expect(t, me(third), http.StatusUnauthorized, "UNAUTHORIZED")
		expectOK(t, me(o.Token), http.StatusOK)
	})

	t.Run("sensitive actions need a sign-in within 10 minutes", func(t *testing.T) {
		o := newOwner(t, s)
		expectOK(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/api-key/regenerate", Token: o.Token}), http.StatusOK)
		s.Clock().Advance(11 * time.Minute)
		defer s.Clock().Advance(-11 * time.Minute)
		expect(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/api-key/regenerate", Token: o.Token}), http.StatusForbidden, "REAUTH_REQUIRED")
		expect(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/api-keys", Token: o.Token,
			Body: map[string]any{"name": "all", "scopes": []string{"full"}}}), http.StatusForbidden, "REAUTH_REQUIRED")
		// A read-only key is no sensitive action.
		expectOK(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/api-keys", Token: o.Token,
			Body: map[string]any{"name": "read", "scopes": []string{"read"}}}), http.StatusCreated)
		expect(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/reauth", Token: o.Token, IP: nextIP(),
			Body: map[string]string{"password": "Wrong-Password-1"}}), http.StatusUnauthorized, "UNAUTHORIZED")
		expect(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/reauth", Token: o.Token, IP: nextIP(),
			Body: map[string]string{}}), http.StatusBadRequest, "VALIDATION_ERROR")
		expectOK(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/reauth", Token: o.Token, IP: nextIP(),
			Body: map[string]string{"password": o.Password}}), http.StatusOK)
		expectOK(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/api-key/regenerate", Token: o.Token}), http.StatusOK)
		expectOK(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/api-keys", Token: o.Token,
			Body: map[string]any{"name": "all", "scopes": []string{"full"}}}), http.StatusCreated)
	})

	t.Run("breached passwords are refused by their SHA-1 prefix", func(t *testing.T) {
		before := asked.Load()
		expect(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/register", IP: nextIP(),
			Body: map[string]string{"email": "breach@example.com", "username": "breachuser", "password": "Password-1234"}}), http.StatusBadRequest, "PASSWORD_BREACHED")
		o := newOwner(t, s)
		expect(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/change-password", Token: o.Token,
			Body: map[string]string{"currentPassword": o.Password, "newPassword": "Breached-Pass-1"}}), http.StatusBadRequest, "PASSWORD_BREACHED")
		expectOK(t, me(o.Token), http.StatusOK)
		expectOK(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/forgot-password", IP: nextIP(), Body: map[string]string{"email": o.Email}}), http.StatusOK)
		token := mailedToken(t, s.WaitMail(t, o.Email, "Reset your Keyward password"))
		expect(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/reset-password", Body: map[string]string{"token": token, "newPassword": "Breached-Pass-1"}}),
			http.StatusBadRequest, "PASSWORD_BREACHED")
		expectOK(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/reset-password", Body: map[string]string{"token": token, "newPassword": "Fresh-Unlisted-7"}}), http.StatusOK)
		// A reset ends every session.
		expect(t, me(o.Token), http.StatusUnauthorized, "UNAUTHORIZED")
		if n := asked.Load() - before; n < 5 {
			t.Fatalf("range asked %d times, want one per new password (at least 5)", n)
		}
	})

	t.Run("recovery codes: ten, shown once, each works once, end the other sessions", func(t *testing.T) {
		o := newOwner(t, s)
		post := func(path, token string, body any) ts.Response {
			return s.Do(t, ts.Req{Method: "POST", Path: path, Token: token, Body: body})
		}
		secret := post("/api/auth/2fa/setup", o.Token, nil).Data()["secret"].(string)
		en := post("/api/auth/2fa/enable", o.Token, map[string]string{"code": code(t, s, secret)})
		expectOK(t, en, http.StatusOK)
		raw, _ := en.Data()["recoveryCodes"].([]any)
		if len(raw) != 10 {
			t.Fatalf("enable answered %d recovery codes, want 10: %s", len(raw), en.Raw)
		}
		codes := make([]string, len(raw))
		seen := map[string]bool{}
		for i, c := range raw {
			codes[i] = c.(string)
			if len(codes[i]) != 11 || seen[codes[i]] {
				t.Fatalf("code %q: want 10 characters and a dash, all different", codes[i])
			}
			seen[codes[i]] = true
		}
		left := func(token string) any {
			r := s.Do(t, ts.Req{Method: "GET", Path: "/api/auth/recovery-codes", Token: token})
			expectOK(t, r, http.StatusOK)
			return r.Data()["remaining"]
		}
		if n := left(o.Token); n != float64(10) {
			t.Fatalf("remaining %v, want 10", n)
		}
		// A TOTP code works once: the next step's.
		s.Clock().Advance(30 * time.Second)
		defer s.Clock().Advance(-30 * time.Second)
		other := post("/api/auth/login", "", map[string]string{"username": o.Username, "password": o.Password, "twoFactorCode": code(t, s, secret)})
		expectOK(t, other, http.StatusOK)
		// Without a code: REQUIRES_2FA as before; a wrong recovery code: 401.
		r := s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/login", IP: nextIP(), Body: map[string]string{"username": o.Username, "password": o.Password}})
		if r.Body["requires2FA"] != true {
			t.Fatalf("login without a code: %s, want requires2FA", r.Raw)
		}
		expect(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/login", IP: nextIP(),
			Body: map[string]string{"username": o.Username, "password": o.Password, "recoveryCode": "aaaaa-bbbbb"}}), http.StatusUnauthorized, "UNAUTHORIZED")
		// Case and the dash are forgiven.
		byCode := s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/login", IP: nextIP(),
			Body: map[string]string{"username": o.Username, "password": o.Password, "recoveryCode": strings.ToUpper(strings.ReplaceAll(codes[4], "-", ""))}})
		expectOK(t, byCode, http.StatusOK)
		token := byCode.Data()["token"].(string)
		expect(t, me(other.Data()["token"].(string)), http.StatusUnauthorized, "UNAUTHORIZED")
		expect(t, me(o.Token), http.StatusUnauthorized, "UNAUTHORIZED")
		expect(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/login", IP: nextIP(),
			Body: map[string]string{"username": o.Username, "password": o.Password, "recoveryCode": codes[4]}}), http.StatusUnauthorized, "UNAUTHORIZED")
		if n := left(token); n != float64(9) {
			t.Fatalf("remaining %v after one use, want 9", n)
		}
		fresh := post("/api/auth/recovery-codes/regenerate", token, nil)
		expectOK(t, fresh, http.StatusOK)
		if n := left(token); n != float64(10) {
			t.Fatalf("remaining %v after regenerating, want 10", n)
		}
		expect(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/login", IP: nextIP(),
			Body: map[string]string{"username": o.Username, "password": o.Password, "recoveryCode": codes[5]}}), http.StatusUnauthorized, "UNAUTHORIZED")
	})

	t.Run("the dashboard socket opens with a single-use ticket", func(t *testing.T) {
		o := newOwner(t, s)
		setPlan(t, s, o.Username, "business")
		app := s.Do(t, ts.Req{Method: "POST", Path: "/api/apps", Token: o.Token, Body: map[string]string{"name": "Ticketed"}})
		expectOK(t, app, http.StatusCreated)
		appID := app.Data()["id"].(string)
		tr := s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/ws-ticket", Token: o.Token})
		expectOK(t, tr, http.StatusOK)
		ticket := tr.Data()["ticket"].(string)
		if strings.Contains(ticket, o.Token) || len(ticket) > 100 {
			t.Fatalf("ticket %q carries the token", ticket)
		}
		url := "ws" + strings.TrimPrefix(s.URL, "http") + "/api/apps/" + appID + "/ws/connect?ticket=" + ticket
		conn, res, err := websocket.DefaultDialer.Dial(url, nil)
		if err != nil {
			t.Fatalf("dial with a ticket: %v (%v)", err, res)
		}
		conn.Close()
		if _, res, err := websocket.DefaultDialer.Dial(url, nil); err == nil || res == nil || res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("the ticket worked twice: %v %v", err, res)
		}
		// Expired after 30 s.
		late := s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/ws-ticket", Token: o.Token}).Data()["ticket"].(string)
		s.Clock().Advance(31 * time.Second)
		defer s.Clock().Advance(-31 * time.Second)
		lateURL := strings.Replace(url, ticket, late, 1)
		if _, res, err := websocket.DefaultDialer.Dial(lateURL, nil); err == nil || res == nil || res.StatusCode != http.StatusUnauthorized {
			t.Fatalf("a ticket of 31 s ago worked: %v %v", err, res)
		}
	})
}

// TestOwnerSessionSignedOutOnEveryNode: a session signed out on one node of a cluster is
// refused on the other at once (both read the stored session).
func TestOwnerSessionSignedOutOnEveryNode(t *testing.T) {
	env := ts.Env(t, ts.Engines{Name: "mongo+redis", Mongo: true, Redis: true})
	a := ts.StartEnv(t, env)
	b := ts.StartEnv(t, env)
	o := newOwner(t, a)
	other := login(t, b, o.Username, o.Password, "").Data()["token"].(string)
	third := login(t, a, o.Username, o.Password, "").Data()["token"].(string)
	expectOK(t, b.Do(t, ts.Req{Method: "GET", Path: "/api/auth/me", Token: other}), http.StatusOK)
	list := a.Do(t, ts.Req{Method: "GET", Path: "/api/auth/sessions", Token: o.Token})
	var otherID string
	for _, x := range list.Body["data"].([]any) {
		row := x.(map[string]any)
		if row["current"] != true && otherID == "" {
			otherID = row["id"].(string)
		}
	}
	// Sign out one session on node a: whichever it was, it is refused on b at once.
	expectOK(t, a.Do(t, ts.Req{Method: "DELETE", Path: "/api/auth/sessions/" + otherID, Token: o.Token}), http.StatusOK)
	refused := 0
	for _, tok := range []string{other, third} {
		if b.Do(t, ts.Req{Method: "GET", Path: "/api/auth/me", Token: tok}).Status == http.StatusUnauthorized {
			refused++
		}
	}
	if refused != 1 {
		t.Fatalf("%d of the two other sessions refused on node b, want exactly the signed-out one", refused)
	}
	expectOK(t, b.Do(t, ts.Req{Method: "POST", Path: "/api/auth/sessions/revoke-others", Token: o.Token}), http.StatusOK)
	for _, tok := range []string{other, third} {
		expect(t, a.Do(t, ts.Req{Method: "GET", Path: "/api/auth/me", Token: tok}), http.StatusUnauthorized, "UNAUTHORIZED")
	}
	expectOK(t, a.Do(t, ts.Req{Method: "GET", Path: "/api/auth/me", Token: o.Token}), http.StatusOK)
}
