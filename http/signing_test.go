package httpapi_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/json"
	"errors"
	"maps"
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

func verified(t *testing.T, s *ts.Server, pub ed25519.PublicKey, what string, req signedresponse.Request, r ts.Response) {
	t.Helper()
	if err := signedresponse.VerifyResponse(pub, req, r.Header, r.Status, r.Raw, s.Clock().Now()); err != nil {
		t.Fatalf("%s: %v (%d %v %s)", what, err, r.Status, r.Header, r.Raw)
	}
}

// signedCall posts a client call as c.post does (the session token added to the body) and
// also answers the request the answer is bound to: the exact body bytes sent, the nonce
// and the challenge (either "" to send none).
func (c *sdk) signedCall(path string, body map[string]any, nonce, challenge string) (signedresponse.Request, ts.Response) {
	c.t.Helper()
	body = maps.Clone(body) // the caller's map is not changed
	if body == nil {
		body = map[string]any{}
	}
	if _, set := body["sessionToken"]; !set && c.token != "" && path != "init" {
		body["sessionToken"] = c.token
	}
	raw, err := json.Marshal(body)
	if err != nil {
		c.t.Fatal(err)
	}
	h := map[string]string{"Accept": "application/json"}
	if nonce != "" {
		h[signedresponse.HeaderNonce] = nonce
	}
	if challenge != "" {
		h[signedresponse.HeaderChallenge] = challenge
	}
	req := signedresponse.Request{Method: "POST", Path: "/api/client/" + path, Body: raw, Nonce: nonce, Challenge: challenge}
	r := c.s.Do(c.t, ts.Req{Method: "POST", Path: req.Path, Body: raw, IP: c.ip, Header: h})
	if path == "init" && r.Status == http.StatusOK {
		c.token = r.Data()["sessionToken"].(string)
	}
	return req, r
}

// signedNonceCall calls path the way SDKs call the nonce calls, with a fresh nonce.
func (c *sdk) signedNonceCall(path string, body map[string]any) (signedresponse.Request, ts.Response) {
	c.t.Helper()
	return c.signedCall(path, body, c.nonce(), "")
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
		var req signedresponse.Request
		waitFor(t, func() bool {
			req, r = c.signedCall("init", map[string]any{"secret": secret, "version": "1.0.0", "hwid": "h"}, "", "")
			return r.Header.Get(signedresponse.HeaderSignature) != ""
		})
		verified(t, s, pub, "init", req, r)
		if r.Header.Get(signedresponse.HeaderVersion) != signedresponse.Version {
			t.Fatalf("X-Signature-Version %q", r.Header.Get(signedresponse.HeaderVersion))
		}
		req, r = c.signedCall("nonce", nil, "", "")
		verified(t, s, pub, "nonce", req, r)
		body := map[string]any{"username": "signer", "password": "pw-signer-1", "hwid": "h"}
		req, r = c.signedNonceCall("register", body)
		expectOK(t, r, http.StatusOK)
		verified(t, s, pub, "register", req, r)
		req, r = c.signedNonceCall("heartbeat", nil)
		expectOK(t, r, http.StatusOK)
		verified(t, s, pub, "heartbeat", req, r)
		req, r = c.signedCall("variables", nil, "", "a-challenge")
		verified(t, s, pub, "variables", req, r)

		// Refusals are signed too, so a forged refusal is detectable.
		req, r = c.signedCall("heartbeat", nil, "", "")
		expect(t, r, http.StatusUnauthorized, "NONCE_REQUIRED")
		verified(t, s, pub, "refused heartbeat", req, r)
		req, r = c.signedNonceCall("login", map[string]any{"username": "signer", "password": "wrong", "hwid": "h"})
		expect(t, r, http.StatusUnauthorized, "UNAUTHORIZED")
		verified(t, s, pub, "refused login", req, r)
		req, r = c.signedCall("variable", map[string]any{"key": "missing"}, "", "")
		expect(t, r, http.StatusNotFound, "NOT_FOUND")
		verified(t, s, pub, "missing variable", req, r)

		// A download is signed over its X-File-Hash, which covers its bytes.
		resp, got := c.download(map[string]any{"name": "Game"}, "")
		if resp.StatusCode != http.StatusOK || resp.Header.Get(signedresponse.HeaderFileHash) == "" {
			t.Fatalf("download: %d %v", resp.StatusCode, resp.Header)
		}
		sent, _ := json.Marshal(map[string]any{"name": "Game", "sessionToken": c.token}) // what download sent
		dl := signedresponse.Request{Method: "POST", Path: "/api/client/file", Body: sent}
		if err := signedresponse.VerifyResponse(pub, dl, resp.Header, resp.StatusCode, got, s.Clock().Now()); err != nil {
			t.Fatalf("download: %v", err)
		}

		// Altered bytes, another time, or another key do not verify.
		req, r = c.signedCall("check", nil, "", "")
		verified(t, s, pub, "check", req, r)
		altered := bytes.Replace(r.Raw, []byte(`"valid":true`), []byte(`"valid":fals`), 1)
		if err := signedresponse.VerifyResponse(pub, req, r.Header, r.Status, altered, s.Clock().Now()); !errors.Is(err, signedresponse.ErrBadSignature) {
			t.Fatalf("altered body: %v", err)
		}
		if err := signedresponse.VerifyResponse(pub, req, r.Header, r.Status, r.Raw, s.Clock().Now().Add(time.Hour)); !errors.Is(err, signedresponse.ErrStale) {
			t.Fatalf("replayed an hour later: %v", err)
		}
		r = a.do("POST", "/api/apps/"+appID+"/signing-key/regenerate", nil)
		expectOK(t, r, http.StatusOK)
		fresh := publicKeyOf(t, a, appID)
		if fresh.Equal(pub) {
			t.Fatal("regenerate kept the key")
		}
		waitFor(t, func() bool {
			req, r = c.signedCall("check", nil, "", "")
			return signedresponse.VerifyResponse(fresh, req, r.Header, r.Status, r.Raw, s.Clock().Now()) == nil
		})
		if err := signedresponse.VerifyResponse(pub, req, r.Header, r.Status, r.Raw, s.Clock().Now()); !errors.Is(err, signedresponse.ErrBadSignature) {
			t.Fatalf("the old key still verifies after regenerate: %v", err)
		}
		waitLog(t, a, appID, "app.signing_key_reset")
	})
}

// TestSignedAnswersBoundToRequest: a signed answer verifies only for the request it
// answers (issue 26). A heartbeat answer of a session that never logged in, relayed to a
// logged-in session, a check-license answer relayed to a request about another key, an
// earlier answer replayed to a later call with another nonce or challenge: all refused.
// Bodies stay byte-identical to an unsigned app's, for clients that ignore signatures.
func TestSignedAnswersBoundToRequest(t *testing.T) {
	s := ts.Start(t, ts.Pairs[0])
	a := api{t, s, newOwner(t, s).Token}
	appID, secret := a.createApp("Bound")
	expectOK(t, a.do("PATCH", "/api/apps/"+appID, map[string]any{"signResponses": true}), http.StatusOK)
	pub := publicKeyOf(t, a, appID)
	now := s.Clock().Now
	refused := func(what string, req signedresponse.Request, r ts.Response) {
		t.Helper()
		if err := signedresponse.VerifyResponse(pub, req, r.Header, r.Status, r.Raw, now()); !errors.Is(err, signedresponse.ErrBadSignature) {
			t.Errorf("%s: %v, want ErrBadSignature", what, err)
		}
	}

	in := newSDK(t, s, secret)
	in.mustInit()
	_, r := in.signedNonceCall("register", map[string]any{"username": "bound", "password": "pw-bound-1", "hwid": "h"})
	expectOK(t, r, http.StatusOK)
	out := newSDK(t, s, secret)
	out.mustInit()

	// Heartbeats: each verifies for its own request only.
	inReq, inBeat := in.signedNonceCall("heartbeat", nil)
	expectOK(t, inBeat, http.StatusOK)
	verified(t, s, pub, "heartbeat", inReq, inBeat)
	outReq, outBeat := out.signedNonceCall("heartbeat", nil)
	expectOK(t, outBeat, http.StatusOK)
	verified(t, s, pub, "heartbeat of a session never logged in", outReq, outBeat)
	refused("a heartbeat answer of another session", inReq, outBeat)
	laterReq, later := in.signedNonceCall("heartbeat", nil)
	verified(t, s, pub, "later heartbeat", laterReq, later)
	refused("an earlier heartbeat answer for a later heartbeat (another nonce)", laterReq, inBeat)

	// check-license: the answer names no key; the request body does.
	_, keyA := createLicenseRecord(a, appID, nil)
	reqA, ansA := in.signedCall("check-license", map[string]any{"licenseKey": keyA}, "", "")
	expectOK(t, ansA, http.StatusOK)
	verified(t, s, pub, "check-license", reqA, ansA)
	reqB, ansB := in.signedCall("check-license", map[string]any{"licenseKey": "NO-SUCH-KEY"}, "", "")
	verified(t, s, pub, "check-license of a missing key", reqB, ansB)
	refused("a check-license answer for another key", reqB, ansA)

	// A challenge binds a call without a nonce: an earlier check answer does not verify
	// for a check with a fresh challenge; the status is signed too.
	req1, check1 := in.signedCall("check", nil, "", "challenge-1")
	verified(t, s, pub, "check", req1, check1)
	req2, check2 := in.signedCall("check", nil, "", "challenge-2")
	verified(t, s, pub, "check", req2, check2)
	refused("a check answer for another challenge", req2, check1)
	withStatus := check1
	withStatus.Status = http.StatusCreated
	refused("another status", req1, withStatus)

	// Version 1 (no X-Signature-Version) is refused, not read the old way.
	v1 := check1
	v1.Header = check1.Header.Clone()
	v1.Header.Del(signedresponse.HeaderVersion)
	if err := signedresponse.VerifyResponse(pub, req1, v1.Header, v1.Status, v1.Raw, now()); !errors.Is(err, signedresponse.ErrVersion) {
		t.Errorf("without X-Signature-Version: %v, want ErrVersion", err)
	}

	// Bodies as an unsigned app gives them (only headers are added).
	_, plainSecret := api{t, s, newOwner(t, s).Token}.createApp("Unbound") // another owner: the free plan has one app
	plain := newSDK(t, s, plainSecret)
	plain.mustInit()
	for _, call := range []struct {
		path string
		body map[string]any
	}{{"variable", map[string]any{"key": "missing"}}, {"check-license", map[string]any{"licenseKey": "NO-SUCH-KEY"}}, {"heartbeat", nil}} {
		_, signedAns := out.signedCall(call.path, call.body, "", "")
		_, plainAns := plain.signedCall(call.path, call.body, "", "")
		if !bytes.Equal(signedAns.Raw, plainAns.Raw) || signedAns.Status != plainAns.Status {
			t.Errorf("%s: signed app answers %d %s, unsigned %d %s", call.path, signedAns.Status, signedAns.Raw, plainAns.Status, plainAns.Raw)
		}
		if signedAns.Header.Get(signedresponse.HeaderSignature) == "" || plainAns.Header.Get(signedresponse.HeaderSignature) != "" ||
			plainAns.Header.Get(signedresponse.HeaderVersion) != "" {
			t.Errorf("%s: signature headers %v / %v", call.path, signedAns.Header, plainAns.Header)
		}
	}
}
