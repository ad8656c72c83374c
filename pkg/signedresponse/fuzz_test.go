package signedresponse_test

import (
	"crypto/ed25519"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/keyward/keyward/pkg/signedresponse"
)

// FuzzVerifyResponse feeds arbitrary keys, headers, requests and bodies to the parsers
// and checks: no panic, every refusal one of the package's errors, and whatever verifies
// was signed by the key for exactly this request and answer (one valid spelling).
func FuzzVerifyResponse(f *testing.F) {
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	now := time.Unix(1_800_000_000, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	body := []byte(`{"success":true,"data":{}}`)
	reqBody := []byte(`{"sessionToken":"t"}`)
	req := signedresponse.Request{Method: "POST", Path: "/api/client/check", Body: reqBody, Nonce: "n"}
	sign := func(ts string, body []byte, hash string) string {
		return signedresponse.Sign(key, ts, req, signedresponse.AnswerOf(http.Header{signedresponse.HeaderFileHash: {hash}}, 200, body))
	}
	f.Add("", "2", ts, sign(ts, body, ""), body, "", reqBody, "n")
	f.Add("AAAA", "", "", "", []byte{}, "", []byte{}, "")
	f.Add("-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----", "2", "x", "zz", []byte("x"), "abc", reqBody, "n")
	f.Add("-----BEGIN PUBLIC KEY-----\n\n-----END PUBLIC KEY-----", "1", "-9223372036854775808", "00", []byte(nil), "", reqBody, "")
	f.Add("", "2", "999999999999999999", sign("999999999999999999", body, ""), body, "", reqBody, "n")
	f.Add("", "2", "1e9", sign("1e9", []byte("h"), ""), body, "h", reqBody, "n")
	f.Add("", "2", ts, sign(ts, nil, "h"), body, "h", reqBody, "n")
	f.Add("", "2", ts, sign(ts, body, ""), body, "", []byte(`{"sessionToken":"u"}`), "n")
	f.Add("", "2", "keyward-license-v1\n", sign("keyward-license-v1\n", body, ""), body, "", reqBody, "n")
	f.Fuzz(func(t *testing.T, pubText, version, timestamp, sig string, body []byte, fileHash string, sentBody []byte, nonce string) {
		pub := key.Public().(ed25519.PublicKey)
		if pubText != "" {
			p, err := signedresponse.ParsePublicKey(pubText)
			if err != nil {
				if !errors.Is(err, signedresponse.ErrBadKey) {
					t.Fatalf("untyped key error %v", err)
				}
				return
			}
			pub = p
		}
		h := http.Header{}
		h.Set(signedresponse.HeaderVersion, version)
		h.Set(signedresponse.HeaderTimestamp, timestamp)
		h.Set(signedresponse.HeaderSignature, sig)
		if fileHash != "" {
			h.Set(signedresponse.HeaderFileHash, fileHash)
		}
		sent := signedresponse.Request{Method: "POST", Path: "/api/client/check", Body: sentBody, Nonce: nonce}
		err := signedresponse.VerifyResponse(pub, sent, h, http.StatusOK, body, now)
		for _, known := range []error{signedresponse.ErrUnsigned, signedresponse.ErrVersion, signedresponse.ErrMalformed,
			signedresponse.ErrBadSignature, signedresponse.ErrStale, signedresponse.ErrBadKey} {
			if errors.Is(err, known) {
				return
			}
		}
		if err != nil {
			t.Fatalf("untyped error %v", err)
		}
		// Accepted: the one spelling the server writes, for exactly what was sent.
		if version != "2" || sig != signedresponse.Sign(key, timestamp, sent, signedresponse.AnswerOf(h, 200, body)) || !pub.Equal(key.Public()) {
			t.Fatalf("accepted version %q timestamp %q signature %q", version, timestamp, sig)
		}
		if _, err := strconv.ParseUint(timestamp, 10, 64); err != nil {
			t.Fatalf("accepted timestamp %q", timestamp)
		}
	})
}
