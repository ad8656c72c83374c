package licensefile_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"testing"
	"time"

	"github.com/keyward/keyward/pkg/licensefile"
)

var fuzzErrors = []error{licensefile.ErrMalformed, licensefile.ErrBadSignature, licensefile.ErrWrongApp,
	licensefile.ErrWrongHWID, licensefile.ErrExpired, licensefile.ErrCheckInDue, licensefile.ErrNotYetValid}

func typed(err error) bool {
	for _, e := range fuzzErrors {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// FuzzVerify feeds arbitrary text to Verify: it never panics and every refusal is one of
// the package's errors. A second run signs the fuzzed bytes as a payload with a real key,
// so that the payload parsing and the deadline checks behind the signature are reached.
func FuzzVerify(f *testing.F) {
	seed := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	pub := seed.Public().(ed25519.PublicKey)
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	good, err := licensefile.Encode(seed, licensefile.Payload{AppID: "app", Key: "K", LicenseID: "l",
		IssuedAt: now.Format(time.RFC3339), CheckInBy: now.Add(time.Hour).Format(time.RFC3339),
		ExpiresAt: now.Add(2 * time.Hour).Format(time.RFC3339), Version: licensefile.FormatVersion})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	f.Add([]byte(""))
	f.Add([]byte(licensefile.BeginLine + "\n" + licensefile.EndLine))
	f.Add([]byte(licensefile.EndLine + licensefile.BeginLine))
	// Found by this fuzzer: the lines sharing their dashes made Decode slice backwards.
	f.Add([]byte("-----BEGIN KEYWARD LICENSE-----END KEYWARD LICENSE-----"))
	f.Add([]byte(licensefile.BeginLine + "\nxx.yy\n" + licensefile.EndLine))
	f.Add([]byte(licensefile.BeginLine + "\n....\n" + licensefile.EndLine))
	f.Add([]byte(`{"v":1,"issuedAt":"2026-01-01T00:00:00Z","checkInBy":"10000-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"v":1,"issuedAt":"x","checkInBy":"","expiresAt":"2026-13-01T00:00:00Z"}`))
	f.Add([]byte(`{"v":"1","level":1e400,"variables":[1]}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, o := range []licensefile.Options{{Now: now}, {Now: now, HWID: "h", AppID: "app"}} {
			if _, err := licensefile.Verify(in, pub, o); err != nil && !typed(err) {
				t.Fatalf("untyped error %v", err)
			}
		}
		// The fuzzed bytes as a correctly signed payload.
		sig := ed25519.Sign(seed, append([]byte("keyward-license-v1\n"), in...))
		file := licensefile.BeginLine + "\n" + base64.RawURLEncoding.EncodeToString(in) + "." +
			base64.RawURLEncoding.EncodeToString(sig) + "\n" + licensefile.EndLine + "\n"
		if _, err := licensefile.Verify([]byte(file), pub, licensefile.Options{Now: now, HWID: "h"}); err != nil {
			if !typed(err) || errors.Is(err, licensefile.ErrBadSignature) {
				t.Fatalf("signed payload %q: %v", in, err)
			}
		}
	})
}
