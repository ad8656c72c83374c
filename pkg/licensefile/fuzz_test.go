package licensefile_test

import (
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"strings"
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
	// Payload lengths of 1 and 2 modulo 3 leave unused bits in the last base64 character.
	f.Add([]byte(`{"v":1}`))
	f.Add([]byte(`{"v":1} `))
	f.Fuzz(func(t *testing.T, in []byte) {
		for _, o := range []licensefile.Options{{Now: now}, {Now: now, HWID: "h", AppID: "app"}} {
			_, err := licensefile.Verify(in, pub, o)
			if err != nil && !typed(err) {
				t.Fatalf("untyped error %v", err)
			}
			// One valid form: whatever passed the signature is spelled canonically.
			if !errors.Is(err, licensefile.ErrMalformed) && !errors.Is(err, licensefile.ErrBadSignature) {
				if inner := innerText(string(in)); inner != canonicalText(inner) {
					t.Fatalf("accepted a non-canonical spelling %q (canonical %q)", inner, canonicalText(inner))
				}
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
		// The same bytes with the unused bits of the payload's last character set: refused.
		if p64 := base64.RawURLEncoding.EncodeToString(in); len(p64)%4 != 0 {
			last := strings.IndexByte(b64Alphabet, p64[len(p64)-1]) | 1 // 2 or 4 unused bits
			respelled := licensefile.BeginLine + "\n" + p64[:len(p64)-1] + string(b64Alphabet[last]) + "." +
				base64.RawURLEncoding.EncodeToString(sig) + "\n" + licensefile.EndLine + "\n"
			if _, err := licensefile.Decode([]byte(respelled), pub); !errors.Is(err, licensefile.ErrMalformed) {
				t.Fatalf("payload %q respelled %q: %v, want ErrMalformed", in, respelled, err)
			}
		}
	})
}

const b64Alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

// innerText is the text between the wrapper lines without whitespace, as Decode reads it.
func innerText(file string) string {
	_, body, _ := strings.Cut(file, licensefile.BeginLine)
	body, _, _ = strings.Cut(body, licensefile.EndLine)
	return strings.Join(strings.Fields(body), "")
}

// canonicalText decodes both parts leniently and encodes them again.
func canonicalText(inner string) string {
	p64, s64, _ := strings.Cut(inner, ".")
	p, _ := base64.RawURLEncoding.DecodeString(p64)
	s, _ := base64.RawURLEncoding.DecodeString(s64)
	return base64.RawURLEncoding.EncodeToString(p) + "." + base64.RawURLEncoding.EncodeToString(s)
}
