package httpapi_test

import (
	"io"
	"mime/quotedprintable"
	"net/http"
	"strings"
	"testing"

	ts "github.com/keyward/keyward/internal/testserver"
)

// TestAccountEmailChange: the change asks both addresses and takes effect only when the new
// one confirms; the old one can cancel it; a taken address gets no link.
func TestAccountEmailChange(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		me := func() map[string]any {
			r := s.Do(t, ts.Req{Method: "GET", Path: "/api/auth/me", Token: o.Token})
			expectOK(t, r, http.StatusOK)
			return r.Data()
		}
		change := func(email string) ts.Response {
			return s.Do(t, ts.Req{Method: "POST", Path: "/api/auth/change-email", Token: o.Token, Body: map[string]string{"email": email}})
		}
		token := func(path, tok string) ts.Response {
			return s.Do(t, ts.Req{Method: "POST", Path: path, IP: nextIP(), Body: map[string]string{"token": tok}})
		}
		expect(t, change("not-an-address"), http.StatusBadRequest, "VALIDATION_ERROR")
		expect(t, change(o.Email), http.StatusBadRequest, "VALIDATION_ERROR")

		// Asked, nothing changes until the new address confirms; the old one can cancel.
		first := "first-" + o.Email
		expectOK(t, change(first), http.StatusOK)
		confirm1 := mailedToken(t, waitPlainMail(t, s, first, "Confirm your new Keyward email address"))
		notice := waitPlainMail(t, s, o.Email, "Your Keyward email is about to change")
		if !strings.Contains(notice, first) {
			t.Fatalf("the old address's notice does not name the new one:\n%s", notice)
		}
		if me()["email"] != o.Email {
			t.Fatal("the email changed before the new address confirmed")
		}
		expectOK(t, token("/api/auth/change-email/cancel", mailedToken(t, notice)), http.StatusOK)
		expect(t, token("/api/auth/change-email/confirm", confirm1), http.StatusBadRequest, "VALIDATION_ERROR")
		if me()["email"] != o.Email {
			t.Fatal("a cancelled change took effect")
		}

		// Asked again and confirmed: changed, verified, and the old address is told.
		second := "second-" + o.Email
		expectOK(t, change(second), http.StatusOK)
		confirm2 := mailedToken(t, waitPlainMail(t, s, second, "Confirm your new Keyward email address"))
		expectOK(t, token("/api/auth/change-email/confirm", confirm2), http.StatusOK)
		if got := me(); got["email"] != second || got["emailVerified"] != true {
			t.Fatalf("after confirmation: %v", got)
		}
		s.WaitMail(t, o.Email, "Your Keyward email was changed")
		expect(t, token("/api/auth/change-email/confirm", confirm2), http.StatusBadRequest, "VALIDATION_ERROR")
		expect(t, token("/api/auth/change-email/confirm", confirm2[:43]+"eA"), http.StatusBadRequest, "VALIDATION_ERROR")
		expect(t, token("/api/auth/change-email/confirm", ""), http.StatusBadRequest, "VALIDATION_ERROR")

		// An address of another account gets a mail without a link; the answer is the same.
		other := newOwner(t, s)
		expectOK(t, change(other.Email), http.StatusOK)
		if m := s.WaitMail(t, other.Email, "Your Keyward email change"); strings.Contains(m, "token:") {
			t.Fatalf("a taken address was mailed a link:\n%s", m)
		}

		// Sensitive: past the re-authentication window it asks who it is.
		s.Clock().Advance(ReauthPast)
		defer s.Clock().Advance(-ReauthPast)
		expect(t, change("third-"+o.Email), http.StatusForbidden, "REAUTH_REQUIRED")
	})
}

// waitPlainMail is WaitMail with the quoted-printable body decoded (the long tokens and
// addresses of these mails are broken across lines on the wire).
func waitPlainMail(t *testing.T, s *ts.Server, to, subject string) string {
	t.Helper()
	raw, err := io.ReadAll(quotedprintable.NewReader(strings.NewReader(s.WaitMail(t, to, subject))))
	if err != nil {
		t.Fatalf("decode mail: %v", err)
	}
	return string(raw)
}
