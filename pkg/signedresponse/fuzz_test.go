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

// FuzzVerifyResponse feeds arbitrary keys, timestamps, signatures and bodies to the
// parsers and checks: no panic, every refusal one of the package's errors.
func FuzzVerifyResponse(f *testing.F) {
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	now := time.Unix(1_800_000_000, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	body := []byte(`{"success":true,"data":{}}`)
	f.Add("", ts, signedresponse.Sign(key, ts, body), body, "")
	f.Add("AAAA", "", "", []byte{}, "")
	f.Add("-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----", "x", "zz", []byte("x"), "abc")
	f.Add("-----BEGIN PUBLIC KEY-----\n\n-----END PUBLIC KEY-----", "-9223372036854775808", "00", []byte(nil), "")
	f.Add("", "9223372036854775807", signedresponse.Sign(key, "9223372036854775807", body), body, "")
	f.Add("", "1e9", signedresponse.Sign(key, "1e9", []byte("h")), body, "h")
	f.Fuzz(func(t *testing.T, pubText, timestamp, sig string, body []byte, fileHash string) {
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
		h.Set(signedresponse.HeaderTimestamp, timestamp)
		h.Set(signedresponse.HeaderSignature, sig)
		if fileHash != "" {
			h.Set(signedresponse.HeaderFileHash, fileHash)
		}
		err := signedresponse.VerifyResponse(pub, h, http.StatusOK, body, now)
		if err != nil && !errors.Is(err, signedresponse.ErrUnsigned) && !errors.Is(err, signedresponse.ErrBadSignature) && !errors.Is(err, signedresponse.ErrStale) {
			t.Fatalf("untyped error %v", err)
		}
	})
}
