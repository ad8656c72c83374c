package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/softauthn"
	ts "github.com/keyward/keyward/internal/testserver"
)

// passkeyOrigin is the public URL of the passkey tests' nodes: the relying party id is its
// host name (an IP address cannot be one).
const passkeyOrigin = "https://keys.example.test"

// ceremony begins one on s and answers its challenge id and options (as JSON).
func ceremony(t *testing.T, s *ts.Server, path, token string, body any) (string, []byte) {
	t.Helper()
	r := s.Do(t, ts.Req{Method: "POST", Path: path, Token: token, Body: body, IP: nextIP()})
	expectOK(t, r, http.StatusOK)
	opts, err := json.Marshal(r.Data()["options"])
	if err != nil {
		t.Fatal(err)
	}
	return r.Data()["challengeId"].(string), opts
}

func finishBody(challengeID string, credential []byte) map[string]any {
	return map[string]any{"challengeId": challengeID, "credential": json.RawMessage(credential)}
}

// addPasskey registers a passkey of auth for o: begun on a, finished on b.
func addPasskey(t *testing.T, a, b *ts.Server, auth *softauthn.Authenticator, token, name string) ts.Response {
	t.Helper()
	id, opts := ceremony(t, a, "/api/auth/passkeys/register/begin", token, nil)
	resp, _, err := auth.Register(opts)
	if err != nil {
		t.Fatalf("softauthn register: %v", err)
	}
	body := finishBody(id, resp)
	body["name"] = name
	return b.Do(t, ts.Req{Method: "POST", Path: "/api/auth/passkeys/register/finish", Token: token, Body: body})
}

// passkeySignIn runs a sign-in ceremony: begun on a, finished on b.
func passkeySignIn(t *testing.T, a, b *ts.Server, auth *softauthn.Authenticator, username string) ts.Response {
	t.Helper()
	var body any
	if username != "" {
		body = map[string]string{"username": username}
	}
	id, opts := ceremony(t, a, "/api/auth/passkeys/login/begin", "", body)
	resp, err := auth.Assert(opts)
	if err != nil {
		t.Fatalf("softauthn assert: %v", err)
	}
	return b.Do(t, ts.Req{Method: "POST", Path: "/api/auth/passkeys/login/finish", IP: nextIP(), Body: finishBody(id, resp)})
}

// TestPasskeys runs the ceremonies with a software authenticator on both engine pairs,
// each begun on one node and finished on another (the challenge is in the database).
func TestPasskeys(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		env := ts.Env(t, e)
		env["KEYWARD_PUBLIC_URL"] = passkeyOrigin
		a := ts.StartEnv(t, env)
		b := ts.StartEnv(t, env) // a second node on the same database
		o := newOwner(t, a)
		auth := softauthn.New(passkeyOrigin)

		// Two socket tickets write no audit entry (a sign-in artifact, not a change).
		for range 2 {
			expectOK(t, a.Do(t, ts.Req{Method: "POST", Path: "/api/auth/ws-ticket", Token: o.Token}), http.StatusOK)
		}

		// Register: begun on a, finished on b; the first passkey makes the recovery codes.
		r := addPasskey(t, a, b, auth, o.Token, "laptop")
		expectOK(t, r, http.StatusCreated)
		pkID := r.Data()["id"].(string)
		if codes, _ := r.Data()["recoveryCodes"].([]any); len(codes) != 10 || r.Data()["name"] != "laptop" {
			t.Fatalf("first passkey: want its name and ten recovery codes: %s", r.Raw)
		}
		entries := auditEntries(t, a, o.Token, "/api/audit", 1)
		if entries[0]["recordType"] != "account" || entries[0]["route"] != "/api/auth/passkeys/register/finish" || entries[0]["recordId"] != pkID {
			t.Fatalf("audit after two socket tickets and a passkey: want the passkey's entry alone: %v", entries)
		}
		list := a.Do(t, ts.Req{Method: "GET", Path: "/api/auth/passkeys", Token: o.Token})
		expectOK(t, list, http.StatusOK)
		if rows := list.Body["data"].([]any); len(rows) != 1 || rows[0].(map[string]any)["name"] != "laptop" || rows[0].(map[string]any)["lastUsedAt"] != nil {
			t.Fatalf("passkeys listed: %s", list.Raw)
		}
		// With a passkey and no TOTP, the recovery codes can be made again.
		regen := a.Do(t, ts.Req{Method: "POST", Path: "/api/auth/recovery-codes/regenerate", Token: o.Token})
		expectOK(t, regen, http.StatusOK)
		if codes, _ := regen.Data()["recoveryCodes"].([]any); len(codes) != 10 {
			t.Fatalf("regenerate with a passkey: %s", regen.Raw)
		}
		// The same authenticator cannot register twice (excluded), and a finish works once.
		id, opts := ceremony(t, a, "/api/auth/passkeys/register/begin", o.Token, nil)
		if _, _, err := auth.Register(opts); err == nil {
			t.Fatal("the creation options do not exclude the authenticator's passkey")
		}
		other := softauthn.New(passkeyOrigin)
		resp, _, err := other.Register(opts)
		if err != nil {
			t.Fatal(err)
		}
		expectOK(t, b.Do(t, ts.Req{Method: "POST", Path: "/api/auth/passkeys/register/finish", Token: o.Token, Body: finishBody(id, resp)}), http.StatusCreated)
		expect(t, b.Do(t, ts.Req{Method: "POST", Path: "/api/auth/passkeys/register/finish", Token: o.Token, Body: finishBody(id, resp)}),
			http.StatusUnauthorized, "UNAUTHORIZED")

		t.Run("sign in without a username, and with one", func(t *testing.T) {
			r := passkeySignIn(t, a, b, auth, "")
			expectOK(t, r, http.StatusOK)
			token := r.Data()["token"].(string)
			me := b.Do(t, ts.Req{Method: "GET", Path: "/api/auth/me", Token: token})
			expectOK(t, me, http.StatusOK)
			if me.Data()["username"] != o.Username {
				t.Fatalf("signed in as %v, want %s", me.Data()["username"], o.Username)
			}
			if c := refreshCookieOf(t, r); c.Value == "" {
				t.Fatal("a passkey sign-in without a refresh cookie")
			}
			// The new sign-in mail applies as to a password sign-in.
			b.WaitMail(t, o.Email, "New sign-in to your Keyward account")
			expectOK(t, passkeySignIn(t, a, b, auth, o.Username), http.StatusOK)
			expectOK(t, passkeySignIn(t, b, a, other, o.Email), http.StatusOK)
			list := a.Do(t, ts.Req{Method: "GET", Path: "/api/auth/passkeys", Token: o.Token})
			if rows := list.Body["data"].([]any); len(rows) != 2 || rows[0].(map[string]any)["lastUsedAt"] == nil {
				t.Fatalf("after sign-ins, passkeys listed: %s", list.Raw)
			}
		})

		t.Run("replayed, other origin, counter gone back and unknown passkeys are refused", func(t *testing.T) {
			id, opts := ceremony(t, a, "/api/auth/passkeys/login/begin", "", nil)
			resp, err := auth.Assert(opts)
			if err != nil {
				t.Fatal(err)
			}
			finish := func(id string, resp []byte) ts.Response {
				return b.Do(t, ts.Req{Method: "POST", Path: "/api/auth/passkeys/login/finish", IP: nextIP(), Body: finishBody(id, resp)})
			}
			expectOK(t, finish(id, resp), http.StatusOK)
			expect(t, finish(id, resp), http.StatusUnauthorized, "UNAUTHORIZED")

			auth.Origin = "https://evil.example.test"
			r := passkeySignIn(t, a, b, auth, "")
			auth.Origin = passkeyOrigin
			expect(t, r, http.StatusUnauthorized, "UNAUTHORIZED")

			cred := auth.CredentialIDs()[0]
			auth.SetCounter(cred, 0) // the next assertion counts 1, below the stored count
			expect(t, passkeySignIn(t, a, b, auth, ""), http.StatusUnauthorized, "UNAUTHORIZED")
			auth.SetCounter(cred, 1000)
			expectOK(t, passkeySignIn(t, a, b, auth, ""), http.StatusOK)

			stranger := softauthn.New(passkeyOrigin)
			if _, _, err := stranger.Register([]byte(`{"publicKey":{"challenge":"AAAA","rp":{"id":"keys.example.test"},"user":{"id":"eHl6"}}}`)); err != nil {
				t.Fatal(err)
			}
			expect(t, passkeySignIn(t, a, b, stranger, ""), http.StatusUnauthorized, "UNAUTHORIZED")
			// Bad input gets the envelope and changes nothing.
			expect(t, b.Do(t, ts.Req{Method: "POST", Path: "/api/auth/passkeys/login/finish", Body: map[string]any{"credential": map[string]any{}}}),
				http.StatusBadRequest, "VALIDATION_ERROR")
			id, _ = ceremony(t, a, "/api/auth/passkeys/login/begin", "", nil)
			expect(t, finish(id, []byte(`{"id":"x","type":"public-key"}`)), http.StatusBadRequest, "VALIDATION_ERROR")
			expect(t, finish("no-such-challenge", resp), http.StatusUnauthorized, "UNAUTHORIZED")
		})

		t.Run("a passkey stands in for the 2FA code", func(t *testing.T) {
			setup := a.Do(t, ts.Req{Method: "POST", Path: "/api/auth/2fa/setup", Token: o.Token})
			expectOK(t, setup, http.StatusOK)
			secret := setup.Data()["secret"].(string)
			expectOK(t, a.Do(t, ts.Req{Method: "POST", Path: "/api/auth/2fa/enable", Token: o.Token, Body: map[string]string{"code": code(t, a, secret)}}), http.StatusOK)
			if r := login(t, a, o.Username, o.Password, ""); r.Body["requires2FA"] != true {
				t.Fatalf("password alone with 2FA on: %s", r.Raw)
			}
			id, opts := ceremony(t, a, "/api/auth/passkeys/login/begin", "", map[string]string{"username": o.Username})
			resp, err := auth.Assert(opts)
			if err != nil {
				t.Fatal(err)
			}
			body := map[string]any{"username": o.Username, "password": o.Password, "passkey": finishBody(id, resp)}
			wrong := map[string]any{"username": o.Username, "password": "Wrong-Horse-9", "passkey": finishBody(id, resp)}
			expect(t, b.Do(t, ts.Req{Method: "POST", Path: "/api/auth/login", IP: nextIP(), Body: wrong}), http.StatusUnauthorized, "UNAUTHORIZED")
			expectOK(t, b.Do(t, ts.Req{Method: "POST", Path: "/api/auth/login", IP: nextIP(), Body: body}), http.StatusOK)
			expect(t, b.Do(t, ts.Req{Method: "POST", Path: "/api/auth/login", IP: nextIP(), Body: body}), http.StatusUnauthorized, "UNAUTHORIZED")
		})

		t.Run("reauthenticate with a passkey, then rename and remove", func(t *testing.T) {
			a.Clock().Advance(ReauthPast)
			defer a.Clock().Advance(-ReauthPast)
			del := func() ts.Response {
				return a.Do(t, ts.Req{Method: "DELETE", Path: "/api/auth/passkeys/" + pkID, Token: o.Token})
			}
			expect(t, del(), http.StatusForbidden, "REAUTH_REQUIRED")
			expect(t, a.Do(t, ts.Req{Method: "POST", Path: "/api/auth/passkeys/register/begin", Token: o.Token}), http.StatusForbidden, "REAUTH_REQUIRED")
			id, opts := ceremony(t, a, "/api/auth/reauth/passkey/begin", o.Token, nil)
			if !strings.Contains(string(opts), "allowCredentials") {
				t.Fatalf("reauth options do not list the account's passkeys: %s", opts)
			}
			resp, err := auth.Assert(opts)
			if err != nil {
				t.Fatal(err)
			}
			r := a.Do(t, ts.Req{Method: "POST", Path: "/api/auth/reauth", Token: o.Token, IP: nextIP(), Body: map[string]any{"passkey": finishBody(id, resp)}})
			expectOK(t, r, http.StatusOK)
			expectOK(t, a.Do(t, ts.Req{Method: "PATCH", Path: "/api/auth/passkeys/" + pkID, Token: o.Token, Body: map[string]string{"name": "old laptop"}}), http.StatusOK)
			expect(t, a.Do(t, ts.Req{Method: "PATCH", Path: "/api/auth/passkeys/" + pkID, Token: o.Token, Body: map[string]string{"name": strings.Repeat("x", 65)}}),
				http.StatusBadRequest, "VALIDATION_ERROR")
			// Another account's owner cannot touch it.
			stranger := newOwner(t, a)
			expect(t, a.Do(t, ts.Req{Method: "DELETE", Path: "/api/auth/passkeys/" + pkID, Token: stranger.Token}), http.StatusNotFound, "NOT_FOUND")
			expectOK(t, del(), http.StatusOK)
			expect(t, del(), http.StatusNotFound, "NOT_FOUND")
			// Its credential signs in no more.
			expect(t, passkeySignIn(t, a, b, auth, ""), http.StatusUnauthorized, "UNAUTHORIZED")
		})
	})
}

// ReauthPast is past the re-authentication window.
const ReauthPast = 11 * time.Minute
