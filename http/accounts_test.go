package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/core/accounts"
	ts "github.com/keyward/keyward/internal/testserver"
)

func TestRegisterAndVerify(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		reg := func(email, username, password string) ts.Response {
			return s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/register", IP: nextIP(),
				Body: map[string]string{"email": email, "username": username, "password": password}})
		}

		first := reg("alice@example.com", "alice", goodPassword)
		expectOK(t, first, http.StatusAccepted)
		if first.Data()["requireVerify"] != true || first.Data()["message"] == "" {
			t.Fatalf("register reply: %s", first.Raw)
		}
		verifyMail := s.WaitMail(t, "alice@example.com", "Verify your Keyward email")

		t.Run("unverified login is 403 requireVerify", func(t *testing.T) {
			r := login(t, s, "alice", goodPassword, "")
			if r.Status != http.StatusForbidden || r.Body["requireVerify"] != true || r.Body["success"] != false {
				t.Fatalf("%d %s", r.Status, r.Raw)
			}
		})
		t.Run("same answer for an existing email and username", func(t *testing.T) {
			again := reg("ALICE@example.com", "alice2", goodPassword)
			sameName := reg("other@example.com", "ALICE", goodPassword)
			for _, r := range []ts.Response{again, sameName} {
				if r.Status != first.Status || string(r.Raw) != string(first.Raw) {
					t.Fatalf("reply differs: %d %s vs %s", r.Status, r.Raw, first.Raw)
				}
			}
			s.WaitMail(t, "alice@example.com", "You already have a Keyward account")
			s.WaitMail(t, "other@example.com", "already taken")
			// Neither created an account.
			expect(t, login(t, s, "alice2", goodPassword, ""), http.StatusUnauthorized, "UNAUTHORIZED")
		})
		t.Run("password rule is checked first and named", func(t *testing.T) {
			for pw, rule := range map[string]string{"Sh0rt": "at least 8", "alllowercase1": "uppercase",
				"ALLUPPERCASE1": "lowercase", "NoDigitsHere": "digit"} {
				r := reg("not-an-email", "x", pw)
				expect(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
				if !strings.Contains(string(r.Raw), rule) || !strings.Contains(string(r.Raw), `"field":"password"`) {
					t.Fatalf("%q: %s", pw, r.Raw)
				}
			}
		})
		t.Run("bad username and email", func(t *testing.T) {
			for _, c := range []struct{ email, username, field string }{
				{"bob@example.com", "b", "username"}, {"bob@example.com", "bob with space", "username"},
				{"bob@example.com", strings.Repeat("b", 33), "username"}, {"bob@", "bob", "email"},
				{"Bob <bob@example.com>", "bob", "email"}, {"", "bob", "email"},
			} {
				r := reg(c.email, c.username, goodPassword)
				expect(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
				if !strings.Contains(string(r.Raw), `"field":"`+c.field+`"`) {
					t.Fatalf("%+v: %s", c, r.Raw)
				}
			}
			if n := s.CountMails(t, "bob@example.com"); n != 0 {
				t.Fatalf("refused registrations sent %d mails", n)
			}
		})
		t.Run("verify signs in, once", func(t *testing.T) {
			token := mailedToken(t, verifyMail)
			r := s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/verify-email", Body: map[string]string{"token": token}})
			expectOK(t, r, http.StatusOK)
			acc := r.Data()["account"].(map[string]any)
			if acc["username"] != "alice" || acc["email"] != "alice@example.com" || acc["role"] != "user" || r.Data()["token"] == "" {
				t.Fatalf("verify reply: %s", r.Raw)
			}
			me := s.Do(t, ts.Req{Method: "GET", Path: "/api/auth/me", Token: r.Data()["token"].(string)})
			expectOK(t, me, http.StatusOK)
			if me.Data()["emailVerified"] != true {
				t.Fatalf("me: %s", me.Raw)
			}
			again := s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/verify-email", Body: map[string]string{"token": token}})
			expect(t, again, http.StatusBadRequest, "VALIDATION_ERROR")
		})
		t.Run("verification token expires after 24 h", func(t *testing.T) {
			expectOK(t, reg("carol@example.com", "carol", goodPassword), http.StatusAccepted)
			token := mailedToken(t, s.WaitMail(t, "carol@example.com", "Verify"))
			s.Clock().Advance(24*time.Hour + time.Minute)
			defer s.Clock().Advance(-24*time.Hour - time.Minute)
			expect(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/verify-email", Body: map[string]string{"token": token}}),
				http.StatusBadRequest, "VALIDATION_ERROR")
		})
		t.Run("resend verification is generic and sends a fresh link", func(t *testing.T) {
			expectOK(t, reg("dave@example.com", "dave", goodPassword), http.StatusAccepted)
			oldToken := mailedToken(t, s.WaitMail(t, "dave@example.com", "Verify"))
			known := s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/resend-verification", IP: nextIP(), Body: map[string]string{"email": "dave@example.com"}})
			unknown := s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/resend-verification", IP: nextIP(), Body: map[string]string{"email": "nobody@example.com"}})
			expectOK(t, known, http.StatusOK)
			if string(known.Raw) != string(unknown.Raw) {
				t.Fatalf("answers differ: %s vs %s", known.Raw, unknown.Raw)
			}
			deadline := time.Now().Add(30 * time.Second)
			for s.CountMails(t, "dave@example.com") < 2 && time.Now().Before(deadline) {
				time.Sleep(20 * time.Millisecond)
			}
			mails := s.Mails(t)
			var newToken string
			for _, m := range mails {
				if strings.Contains(m, "<dave@example.com>") {
					newToken = mailedToken(t, m)
				}
			}
			if newToken == "" || newToken == oldToken {
				t.Fatal("no fresh token mailed")
			}
			// The earlier link no longer works; the new one does.
			expect(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/verify-email", Body: map[string]string{"token": oldToken}}), http.StatusBadRequest, "VALIDATION_ERROR")
			expectOK(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/verify-email", Body: map[string]string{"token": newToken}}), http.StatusOK)
		})
		t.Run("register is limited to 3 per hour per IP", func(t *testing.T) {
			ip := nextIP()
			for i := 0; i < 3; i++ {
				r := s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/register", IP: ip,
					Body: map[string]string{"email": "lim@example.com", "username": "lim", "password": goodPassword}})
				expectOK(t, r, http.StatusAccepted)
			}
			r := s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/register", IP: ip,
				Body: map[string]string{"email": "lim2@example.com", "username": "lim2", "password": goodPassword}})
			expect(t, r, http.StatusTooManyRequests, "RATE_LIMITED")
			if r.Header.Get("Retry-After") == "" {
				t.Fatal("no Retry-After")
			}
			expect(t, login(t, s, "lim2", goodPassword, ""), http.StatusUnauthorized, "UNAUTHORIZED")
		})
	})
}

func TestLogin(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)

		t.Run("by username and by email", func(t *testing.T) {
			for _, name := range []string{o.Username, strings.ToUpper(o.Username), o.Email} {
				r := login(t, s, name, o.Password, "")
				expectOK(t, r, http.StatusOK)
				acc := r.Data()["account"].(map[string]any)
				if acc["id"] != o.ID || acc["twoFactorEnabled"] != false || r.Data()["token"] == "" {
					t.Fatalf("login reply: %s", r.Raw)
				}
			}
			me := s.Do(t, ts.Req{Method: "GET", Path: "/api/auth/me", Token: o.Token})
			if me.Data()["lastLoginAt"] == nil {
				t.Fatalf("lastLoginAt not set: %s", me.Raw)
			}
		})
		t.Run("wrong password and unknown user answer alike", func(t *testing.T) {
			wrong := login(t, s, o.Username, "Wrong-Password-1", "")
			unknown := login(t, s, "nobody-here", "Wrong-Password-1", "")
			expect(t, wrong, http.StatusUnauthorized, "UNAUTHORIZED")
			if string(wrong.Raw) != string(unknown.Raw) {
				t.Fatalf("answers differ: %s vs %s", wrong.Raw, unknown.Raw)
			}
		})
		t.Run("missing members", func(t *testing.T) {
			expect(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/login", Body: map[string]string{"username": "x"}}), http.StatusBadRequest, "VALIDATION_ERROR")
		})
		t.Run("the 6th login in 15 minutes is refused", func(t *testing.T) {
			ip := nextIP()
			for i := 0; i < 5; i++ {
				r := s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/login", IP: ip, Body: map[string]string{"username": o.Username, "password": "Wrong-Password-1"}})
				expect(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
			}
			r := s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/login", IP: ip, Body: map[string]string{"username": o.Username, "password": o.Password}})
			expect(t, r, http.StatusTooManyRequests, "RATE_LIMITED")
			if r.Header.Get("Retry-After") == "" {
				t.Fatal("no Retry-After")
			}
			// Another IP, or another username from the same IP, has its own budget.
			expectOK(t, login(t, s, o.Username, o.Password, ""), http.StatusOK)
		})
		t.Run("the budget is the account's whichever name is typed", func(t *testing.T) {
			// Username, email and either in another case are one account: 5 tries in all,
			// not 5 per spelling.
			ip := nextIP()
			try := func(name, password string) ts.Response {
				return s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/login", IP: ip, Body: map[string]string{"username": name, "password": password}})
			}
			for _, name := range []string{o.Username, o.Email, strings.ToUpper(o.Username), " " + strings.ToUpper(o.Email) + " ", o.Username} {
				expect(t, try(name, "Wrong-Password-1"), http.StatusUnauthorized, "UNAUTHORIZED")
			}
			for _, name := range []string{o.Email, strings.ToUpper(o.Username), o.Username} {
				expect(t, try(name, o.Password), http.StatusTooManyRequests, "RATE_LIMITED")
			}
			// A name no account has is limited as typed (trimmed, any case), so probing
			// unknown names earns nothing either; another unknown name has its own budget.
			ghost := "ghost" + strings.ToLower(o.Username)
			for i := 0; i < 5; i++ {
				expect(t, try([]string{ghost, strings.ToUpper(ghost), " " + ghost}[i%3], "Wrong-Password-1"), http.StatusUnauthorized, "UNAUTHORIZED")
			}
			expect(t, try(ghost, "Wrong-Password-1"), http.StatusTooManyRequests, "RATE_LIMITED")
			expect(t, try(ghost+"@example.com", "Wrong-Password-1"), http.StatusUnauthorized, "UNAUTHORIZED")
		})
	})
}

func TestTwoFactor(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		post := func(path, token string, body any) ts.Response {
			return s.Do(t, ts.Req{Method: "POST", Path: path, Token: token, Body: body, IP: nextIP()})
		}
		setup := post("/api/auth/2fa/setup", o.Token, nil)
		expectOK(t, setup, http.StatusOK)
		secret := setup.Data()["secret"].(string)
		url := setup.Data()["otpauth"].(string)
		if !strings.HasPrefix(url, "otpauth://totp/Keyward:") || !strings.Contains(url, "issuer=Keyward") || !strings.Contains(url, secret) {
			t.Fatalf("otpauth URL: %s", url)
		}
		// Pending: login still needs no code.
		expectOK(t, login(t, s, o.Username, o.Password, ""), http.StatusOK)

		expect(t, post("/api/auth/2fa/enable", o.Token, map[string]string{"code": "12345"}), http.StatusBadRequest, "VALIDATION_ERROR")
		expect(t, post("/api/auth/2fa/enable", o.Token, map[string]string{"code": "000000"}), http.StatusBadRequest, "VALIDATION_ERROR")
		enableCode := code(t, s, secret)
		expectOK(t, post("/api/auth/2fa/enable", o.Token, map[string]string{"code": enableCode}), http.StatusOK)

		t.Run("login without code asks for it", func(t *testing.T) {
			r := login(t, s, o.Username, o.Password, "")
			if r.Body["success"] != false || r.Body["requires2FA"] != true || r.Body["message"] == "" {
				t.Fatalf("%d %s", r.Status, r.Raw)
			}
			if _, hasToken := r.Body["data"]; hasToken {
				t.Fatalf("token leaked: %s", r.Raw)
			}
		})
		t.Run("a used code is refused, a wrong code answers like a wrong password", func(t *testing.T) {
			replay := login(t, s, o.Username, o.Password, enableCode)
			expect(t, replay, http.StatusUnauthorized, "UNAUTHORIZED")
			wrongPw := login(t, s, o.Username, "Wrong-Password-1", enableCode)
			if string(replay.Raw) != string(wrongPw.Raw) {
				t.Fatalf("answers differ: %s vs %s", replay.Raw, wrongPw.Raw)
			}
		})
		s.Clock().Advance(30 * time.Second)
		loginCode := code(t, s, secret)
		var token string
		t.Run("login with a fresh code", func(t *testing.T) {
			r := login(t, s, o.Email, o.Password, loginCode)
			expectOK(t, r, http.StatusOK)
			token = r.Data()["token"].(string)
			if r.Data()["account"].(map[string]any)["twoFactorEnabled"] != true {
				t.Fatalf("%s", r.Raw)
			}
			expect(t, login(t, s, o.Email, o.Password, loginCode), http.StatusUnauthorized, "UNAUTHORIZED")
		})
		t.Run("setup again while enabled is a conflict", func(t *testing.T) {
			expect(t, post("/api/auth/2fa/setup", token, nil), http.StatusConflict, "CONFLICT")
		})
		t.Run("change password by code", func(t *testing.T) {
			s.Clock().Advance(30 * time.Second)
			r := post("/api/auth/change-password", token, map[string]string{"twoFactorCode": code(t, s, secret), "newPassword": "Second-Pass-2"})
			expectOK(t, r, http.StatusOK)
			token = r.Data()["token"].(string)
			o.Password = "Second-Pass-2"
		})
		t.Run("reset by 2FA", func(t *testing.T) {
			s.Clock().Advance(30 * time.Second)
			c := code(t, s, secret)
			r := post("/api/auth/reset-password-2fa", "", map[string]string{"username": o.Username, "twoFactorCode": c, "newPassword": "Third-Pass-3"})
			expectOK(t, r, http.StatusOK)
			// The same code cannot be used twice.
			r = post("/api/auth/reset-password-2fa", "", map[string]string{"username": o.Username, "twoFactorCode": c, "newPassword": "Fourth-Pass-4"})
			expect(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
			// Earlier tokens are revoked.
			expect(t, s.Do(t, ts.Req{Method: "GET", Path: "/api/auth/me", Token: token}), http.StatusUnauthorized, "UNAUTHORIZED")
			o.Password = "Third-Pass-3"
			s.Clock().Advance(30 * time.Second)
			r = login(t, s, o.Username, o.Password, code(t, s, secret))
			expectOK(t, r, http.StatusOK)
			token = r.Data()["token"].(string)
		})
		t.Run("disable needs password and a fresh code", func(t *testing.T) {
			s.Clock().Advance(30 * time.Second)
			c := code(t, s, secret)
			expect(t, post("/api/auth/2fa/disable", token, map[string]string{"password": "Wrong-Password-1", "code": c}), http.StatusUnauthorized, "UNAUTHORIZED")
			expect(t, post("/api/auth/2fa/disable", token, map[string]string{"password": o.Password}), http.StatusBadRequest, "VALIDATION_ERROR")
			expectOK(t, post("/api/auth/2fa/disable", token, map[string]string{"password": o.Password, "code": c}), http.StatusOK)
			expectOK(t, login(t, s, o.Username, o.Password, ""), http.StatusOK)
		})
		t.Run("reset by 2FA without 2FA is refused", func(t *testing.T) {
			r := post("/api/auth/reset-password-2fa", "", map[string]string{"username": o.Username, "twoFactorCode": "123456", "newPassword": "Fifth-Pass-5"})
			expect(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
		})
	})
}

func TestSessionsAndPasswords(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		me := func(token string) ts.Response {
			return s.Do(t, ts.Req{Method: "GET", Path: "/api/auth/me", Token: token})
		}
		t.Run("logout revokes only the presented token", func(t *testing.T) {
			o := newOwner(t, s)
			other := login(t, s, o.Username, o.Password, "").Data()["token"].(string)
			expectOK(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/logout", Token: o.Token}), http.StatusOK)
			expect(t, me(o.Token), http.StatusUnauthorized, "UNAUTHORIZED")
			expectOK(t, me(other), http.StatusOK)
		})
		t.Run("change password revokes every earlier token", func(t *testing.T) {
			o := newOwner(t, s)
			other := login(t, s, o.Username, o.Password, "").Data()["token"].(string)
			expect(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/change-password", Token: o.Token,
				Body: map[string]string{"currentPassword": "Wrong-Password-1", "newPassword": "New-Password-2"}}), http.StatusUnauthorized, "UNAUTHORIZED")
			expect(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/change-password", Token: o.Token,
				Body: map[string]string{"currentPassword": o.Password, "newPassword": "weak"}}), http.StatusBadRequest, "VALIDATION_ERROR")
			expect(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/change-password", Token: o.Token,
				Body: map[string]string{"newPassword": "New-Password-2"}}), http.StatusBadRequest, "VALIDATION_ERROR")
			r := s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/change-password", Token: o.Token,
				Body: map[string]string{"currentPassword": o.Password, "newPassword": "New-Password-2"}})
			expectOK(t, r, http.StatusOK)
			expect(t, me(o.Token), http.StatusUnauthorized, "UNAUTHORIZED")
			expect(t, me(other), http.StatusUnauthorized, "UNAUTHORIZED")
			expectOK(t, me(r.Data()["token"].(string)), http.StatusOK)
			expect(t, login(t, s, o.Username, o.Password, ""), http.StatusUnauthorized, "UNAUTHORIZED")
			expectOK(t, login(t, s, o.Username, "New-Password-2", ""), http.StatusOK)
		})
		t.Run("the token change-password answers is always accepted", func(t *testing.T) {
			// Its issued-at and the cut-off fall in the same millisecond or the next: about
			// half of them were refused when the issued-at was read back through a float.
			o := newOwner(t, s)
			token, password := o.Token, o.Password
			for i := 0; i < 20; i++ {
				next := fmt.Sprintf("Changed-Pass-%d", i)
				r := s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/change-password", Token: token,
					Body: map[string]string{"currentPassword": password, "newPassword": next}})
				expectOK(t, r, http.StatusOK)
				expect(t, me(token), http.StatusUnauthorized, "UNAUTHORIZED")
				token, password = r.Data()["token"].(string), next
				if got := me(token); got.Status != http.StatusOK {
					t.Fatalf("change %d: the token just answered is refused: %d %s", i, got.Status, got.Raw)
				}
			}
		})
		t.Run("forgot and reset password", func(t *testing.T) {
			o := newOwner(t, s)
			known := s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/forgot-password", IP: nextIP(), Body: map[string]string{"email": o.Email}})
			unknown := s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/forgot-password", IP: nextIP(), Body: map[string]string{"email": "ghost@example.com"}})
			expectOK(t, known, http.StatusOK)
			if string(known.Raw) != string(unknown.Raw) {
				t.Fatalf("answers differ: %s vs %s", known.Raw, unknown.Raw)
			}
			token := mailedToken(t, s.WaitMail(t, o.Email, "Reset your Keyward password"))
			reset := func(tok, pw string) ts.Response {
				return s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/reset-password", Body: map[string]string{"token": tok, "newPassword": pw}})
			}
			expect(t, reset(token, "weak"), http.StatusBadRequest, "VALIDATION_ERROR")
			expect(t, reset("not-a-token", "Reset-Password-3"), http.StatusBadRequest, "VALIDATION_ERROR")
			expectOK(t, reset(token, "Reset-Password-3"), http.StatusOK)
			expect(t, reset(token, "Reset-Password-4"), http.StatusBadRequest, "VALIDATION_ERROR")
			expect(t, me(o.Token), http.StatusUnauthorized, "UNAUTHORIZED")
			expectOK(t, login(t, s, o.Username, "Reset-Password-3", ""), http.StatusOK)
		})
		t.Run("reset token expires after 1 hour", func(t *testing.T) {
			o := newOwner(t, s)
			expectOK(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/forgot-password", IP: nextIP(), Body: map[string]string{"email": o.Email}}), http.StatusOK)
			token := mailedToken(t, s.WaitMail(t, o.Email, "Reset your Keyward password"))
			s.Clock().Advance(61 * time.Minute)
			defer s.Clock().Advance(-61 * time.Minute)
			r := s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/reset-password", Body: map[string]string{"token": token, "newPassword": "Reset-Password-3"}})
			expect(t, r, http.StatusBadRequest, "VALIDATION_ERROR")
		})
		t.Run("forgot password is limited to 2 per day per IP", func(t *testing.T) {
			ip := nextIP()
			for i := 0; i < 2; i++ {
				expectOK(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/forgot-password", IP: ip, Body: map[string]string{"email": "x@example.com"}}), http.StatusOK)
			}
			expect(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/forgot-password", IP: ip, Body: map[string]string{"email": "x@example.com"}}), http.StatusTooManyRequests, "RATE_LIMITED")
		})
	})
}

func TestAPIKeyAndAccount(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		me := s.Do(t, ts.Req{Method: "GET", Path: "/api/auth/me", Token: o.Token})
		expectOK(t, me, http.StatusOK)
		d := me.Data()
		for _, k := range []string{"id", "email", "username", "role", "apiKey", "emailVerified", "twoFactorEnabled", "createdAt",
			"applicationCount", "plan", "apiCallsUsed", "apiCallsResetAt"} {
			if _, ok := d[k]; !ok {
				t.Fatalf("account lacks %s: %s", k, me.Raw)
			}
		}
		plan := d["plan"].(map[string]any)
		if plan["name"] != "free" || plan["limits"].(map[string]any)["maxApps"] != float64(1) {
			t.Fatalf("plan: %v", plan)
		}
		masked := d["apiKey"].(string)
		if !strings.HasPrefix(masked, "kw_") || !strings.Contains(masked, "...") || len(masked) > 16 {
			t.Fatalf("masked key: %q", masked)
		}

		r := s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/api-key/regenerate", Token: o.Token})
		expectOK(t, r, http.StatusOK)
		key := r.Data()["apiKey"].(string)
		if len(key) < 40 {
			t.Fatalf("key: %q", key)
		}
		viaKey := s.Do(t, ts.Req{Method: "GET", Path: "/api/auth/me", APIKey: key})
		expectOK(t, viaKey, http.StatusOK)
		if viaKey.Data()["id"] != o.ID || viaKey.Data()["apiKey"] != key[:7]+"..."+key[len(key)-4:] {
			t.Fatalf("via key: %s", viaKey.Raw)
		}
		t.Run("the key cannot change credentials", func(t *testing.T) {
			expect(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/change-password", APIKey: key,
				Body: map[string]string{"currentPassword": o.Password, "newPassword": "New-Password-2"}}), http.StatusForbidden, "FORBIDDEN")
			expect(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/2fa/setup", APIKey: key}), http.StatusForbidden, "FORBIDDEN")
			expect(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/api-key/regenerate", APIKey: key}), http.StatusForbidden, "FORBIDDEN")
			expectOK(t, login(t, s, o.Username, o.Password, ""), http.StatusOK)
		})
		t.Run("regenerating invalidates the old key at once", func(t *testing.T) {
			expectOK(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/api-key/regenerate", Token: o.Token}), http.StatusOK)
			expect(t, s.Do(t, ts.Req{Method: "GET", Path: "/api/auth/me", APIKey: key}), http.StatusUnauthorized, "UNAUTHORIZED")
			expect(t, s.Do(t, ts.Req{Method: "GET", Path: "/api/auth/me", APIKey: "kw_bogus"}), http.StatusUnauthorized, "UNAUTHORIZED")
		})
		t.Run("plans", func(t *testing.T) {
			r := s.Do(t, ts.Req{Method: "GET", Path: "/api/plans"})
			expectOK(t, r, http.StatusOK)
			list := r.Body["data"].([]any)
			if len(list) != 3 {
				t.Fatalf("plans: %s", r.Raw)
			}
			free := list[0].(map[string]any)
			limits := free["limits"].(map[string]any)
			if free["name"] != "free" || free["priceMonth"] != float64(0) || limits["maxUsersPerApp"] != float64(15) ||
				limits["maxApiCallsMonth"] != float64(2500) || limits["webSocketAccess"] != false {
				t.Fatalf("free plan: %v", free)
			}
			if list[1].(map[string]any)["priceMonth"] != 4.99 || list[2].(map[string]any)["limits"].(map[string]any)["webSocketAccess"] != true {
				t.Fatalf("paid plans: %s", r.Raw)
			}
			sel := func(p string) ts.Response {
				return s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/plan", Token: o.Token, Body: map[string]string{"plan": p}})
			}
			expectOK(t, sel("free"), http.StatusOK)
			expect(t, sel("pro"), http.StatusForbidden, "FORBIDDEN")
			expect(t, sel("business"), http.StatusForbidden, "FORBIDDEN")
			expect(t, sel("gold"), http.StatusBadRequest, "VALIDATION_ERROR")
			expect(t, sel(""), http.StatusBadRequest, "VALIDATION_ERROR")
		})
	})
}

func TestAdministration(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		if _, err := s.Node.Accounts().CreateAccount(t.Context(), accounts.CreateInput{Username: "root", Email: "root@example.com",
			Password: goodPassword, Role: "admin"}); err != nil {
			t.Fatal(err)
		}
		admin := login(t, s, "root", goodPassword, "").Data()["token"].(string)

		expect(t, s.Do(t, ts.Req{Method: "GET", Path: "/api/admin/accounts", Token: o.Token}), http.StatusForbidden, "FORBIDDEN")
		expect(t, s.Do(t, ts.Req{Method: "PATCH", Path: "/api/admin/accounts/" + o.ID, Token: o.Token, Body: map[string]string{"plan": "pro"}}), http.StatusForbidden, "FORBIDDEN")

		r := s.Do(t, ts.Req{Method: "GET", Path: "/api/admin/accounts?search=" + o.Username[:6] + "&limit=10", Token: admin})
		expectOK(t, r, http.StatusOK)
		if r.Data()["total"] != float64(1) {
			t.Fatalf("search: %s", r.Raw)
		}
		expect(t, s.Do(t, ts.Req{Method: "GET", Path: "/api/admin/accounts?limit=1000", Token: admin}), http.StatusBadRequest, "VALIDATION_ERROR")

		r = s.Do(t, ts.Req{Method: "PATCH", Path: "/api/admin/accounts/" + o.ID, Token: admin, Body: map[string]string{"plan": "business"}})
		expectOK(t, r, http.StatusOK)
		if r.Data()["plan"].(map[string]any)["name"] != "business" {
			t.Fatalf("%s", r.Raw)
		}
		expect(t, s.Do(t, ts.Req{Method: "PUT", Path: "/api/admin/accounts/" + o.ID, Token: admin, Body: map[string]string{"role": "root"}}), http.StatusBadRequest, "VALIDATION_ERROR")
		expect(t, s.Do(t, ts.Req{Method: "PATCH", Path: "/api/admin/accounts/nope", Token: admin, Body: map[string]string{"role": "admin"}}), http.StatusNotFound, "NOT_FOUND")
		expectOK(t, s.Do(t, ts.Req{Method: "PUT", Path: "/api/admin/accounts/" + o.ID, Token: admin, Body: map[string]string{"role": "admin"}}), http.StatusOK)
		// The promoted owner is an admin at once.
		expectOK(t, s.Do(t, ts.Req{Method: "GET", Path: "/api/admin/accounts", Token: o.Token}), http.StatusOK)
	})
}
