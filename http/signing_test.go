package httpapi_test

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"net/http"
	"testing"
	"time"

	ts "github.com/keyward/keyward/internal/testserver"
	"github.com/keyward/keyward/pkg/signedresponse"
)

// publicKeyOf reads the app's public key from its get response, in both forms, and
// checks that they name the same key.
func publicKeyOf(t *testing.T, a api, appID string) ed25519.PublicKey {
	t.Helper()
	r := a.do("GET", "/api/apps/"+appID, nil)
	expectOK(t, r, http.StatusOK)
	pk, _ := r.Data()["publicKey"].(map[string]any)
	b64, _ := pk["base64"].(string)
	pemText, _ := pk["pem"].(string)
	fromB64, err := signedresponse.ParsePublicKey(b64)
	if err != nil {
		t.Fatalf("publicKey.base64: %v (%s)", err, r.Raw)
	}
	fromPEM, err := signedresponse.ParsePublicKey(pemText)
	if err != nil || !fromPEM.Equal(fromB64) {
		t.Fatalf("publicKey.pem = %v, %v; want the base64 key", fromPEM, err)
	}
	return fromB64
}

func verified(t *testing.T, s *ts.Server, pub ed25519.PublicKey, what string, r ts.Response) {
	t.Helper()
	if err := signedresponse.VerifyResponse(pub, r.Header, r.Status, r.Raw, s.Clock().Now()); err != nil {
		t.Fatalf("%s: %v (%d %v %s)", what, err, r.Status, r.Header, r.Raw)
	}
}

// TestSignedClientResponses: with signResponses on, every client answer (successes,
// error envelopes, a download) verifies with the public key of the app's get response and
// pkg/signedresponse; an altered body or a regenerated key does not; with it off, nothing
// is added.
func TestSignedClientResponses(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("Signed")
		content := bytes.Repeat([]byte("signed-bytes"), 100)
		uploadFile(a, appID, "Game", "1.0.0", content)

		// Off by default: the official SDKs see the answers they always saw.
		plain := newSDK(t, s, secret)
		r := plain.init("1.0.0", "h")
		expectOK(t, r, http.StatusOK)
		if r.Header.Get(signedresponse.HeaderSignature) != "" || r.Header.Get(signedresponse.HeaderTimestamp) != "" {
			t.Fatalf("signature headers on an app without signResponses: %v", r.Header)
		}

		pub := publicKeyOf(t, a, appID)
		r = a.do("PATCH", "/api/apps/"+appID, map[string]any{"signResponses": true})
		expectOK(t, r, http.StatusOK)
		if r.Data()["signResponses"] != true {
			t.Fatalf("update: %s", r.Raw)
		}
		c := newSDK(t, s, secret)
		waitFor(t, func() bool {
			r = c.init("1.0.0", "h")
			return r.Header.Get(signedresponse.HeaderSignature) != ""
		})
		verified(t, s, pub, "init", r)
		verified(t, s, pub, "nonce", c.post("nonce", nil, ""))
		body := map[string]any{"username": "signer", "password": "pw-signer-1", "hwid": "h"}
		r = c.withNonce("register", body)
		expectOK(t, r, http.StatusOK)
		verified(t, s, pub, "register", r)
		r = c.withNonce("heartbeat", nil)
		expectOK(t, r, http.StatusOK)
		verified(t, s, pub, "heartbeat", r)
		verified(t, s, pub, "variables", c.post("variables", nil, ""))

		// Refusals are signed too, so a forged refusal is detectable.
		r = c.post("heartbeat", nil, "")
		expect(t, r, http.StatusUnauthorized, "NONCE_REQUIRED")
		verified(t, s, pub, "refused heartbeat", r)
		r = c.withNonce("login", map[string]any{"username": "signer", "password": "wrong", "hwid": "h"})
		expect(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
		verified(t, s, pub, "refused login", r)
		r = c.post("variable", map[string]any{"key": "missing"}, "")
		expect(t, r, http.StatusNotFound, "NOT_FOUND")
		verified(t, s, pub, "missing variable", r)

		// A download is signed over its X-File-Hash, which covers its bytes.
		resp, got := c.download(map[string]any{"name": "Game"}, "")
		if resp.StatusCode != http.StatusOK || resp.Header.Get(signedresponse.HeaderFileHash) == "" {
			t.Fatalf("download: %d %v", resp.StatusCode, resp.Header)
		}
		if err := signedresponse.VerifyResponse(pub, resp.Header, resp.StatusCode, got, s.Clock().Now()); err != nil {
			t.Fatalf("download: %v", err)
		}

		// Altered bytes, another time, or another key do not verify.
		r = c.post("check", nil, "")
		verified(t, s, pub, "check", r)
		altered := bytes.Replace(r.Raw, []byte(`"valid":true`), []byte(`"valid":fals`), 1)
		if err := signedresponse.VerifyResponse(pub, r.Header, r.Status, altered, s.Clock().Now()); !errors.Is(err, signedresponse.ErrBadSignature) {
			t.Fatalf("altered body: %v", err)
		}
		if err := signedresponse.VerifyResponse(pub, r.Header, r.Status, r.Raw, s.Clock().Now().Add(time.Hour)); !errors.Is(err, signedresponse.ErrStale) {
			t.Fatalf("replayed an hour later: %v", err)
		}
		r = a.do("POST", "/api/apps/"+appID+"/signing-key/regenerate", nil)
		expectOK(t, r, http.StatusOK)
		fresh := publicKeyOf(t, a, appID)
		if fresh.Equal(pub) {
			t.Fatal("regenerate kept the key")
		}
		waitFor(t, func() bool {
			r = c.post("check", nil, "")
			return signedresponse.VerifyResponse(fresh, r.Header, r.Status, r.Raw, s.Clock().Now()) == nil
		})
		if err := signedresponse.VerifyResponse(pub, r.Header, r.Status, r.Raw, s.Clock().Now()); !errors.Is(err, signedresponse.ErrBadSignature) {
			t.Fatalf("the old key still verifies after regenerate: %v", err)
		}
		waitLog(t, a, appID, "app.signing_key_reset")
	})
}
