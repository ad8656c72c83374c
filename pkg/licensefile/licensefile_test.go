package licensefile_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/pkg/licensefile"
)

var issued = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func sample() licensefile.Payload {
	return licensefile.Payload{AppID: "app-1", LicenseID: "lic-1", Key: "PRO-AAAAA-BBBBB", Level: 3, Duration: 86400,
		ExpiresAt: issued.Add(90 * 24 * time.Hour).Format(time.RFC3339), IssuedAt: issued.Format(time.RFC3339),
		CheckInBy: issued.Add(30 * 24 * time.Hour).Format(time.RFC3339), HWID: "machine-1",
		Variables: map[string]string{"tier": "gold", "a&b": "<x>"}}
}

func TestVerify(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	other, _, _ := ed25519.GenerateKey(rand.Reader)
	file, err := licensefile.Encode(priv, sample())
	if err != nil {
		t.Fatal(err)
	}
	text := string(file)
	if !strings.HasPrefix(text, licensefile.BeginLine+"\n") || !strings.HasSuffix(text, licensefile.EndLine+"\n") {
		t.Fatalf("wrapper:\n%s", text)
	}
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		if len(line) > 64 && !strings.HasPrefix(line, "-----") {
			t.Fatalf("line longer than 64 columns: %q", line)
		}
	}
	ok := licensefile.Options{Now: issued.Add(time.Hour), HWID: "machine-1", AppID: "app-1"}
	p, err := licensefile.Verify(file, pub, ok)
	want := sample()
	want.Version = licensefile.FormatVersion
	if err != nil || !equal(p, want) {
		t.Fatalf("Verify = %+v, %v", p, err)
	}
	// Copy and paste: CRLF, re-indented, surrounded by mail text.
	pasted := "Hi, here is your license:\r\n\r\n" + strings.ReplaceAll(text, "\n", "\r\n   ") + "\r\nThanks"
	if _, err := licensefile.Verify([]byte(pasted), pub, ok); err != nil {
		t.Fatalf("pasted file: %v", err)
	}

	// Each refusal names its reason; no server is involved.
	tampered := []byte(text)
	i := len(licensefile.BeginLine) + 10
	tampered[i] ^= 1
	for name, c := range map[string]struct {
		file []byte
		pub  ed25519.PublicKey
		o    licensefile.Options
		want error
	}{
		"tampered byte": {tampered, pub, ok, licensefile.ErrBadSignature},
		"wrong key":     {file, other, ok, licensefile.ErrBadSignature},
		"not a file":    {[]byte("hello"), pub, ok, licensefile.ErrMalformed},
		"expired":       {file, pub, licensefile.Options{Now: issued.Add(91 * 24 * time.Hour)}, licensefile.ErrExpired},
		"check-in due":  {file, pub, licensefile.Options{Now: issued.Add(31 * 24 * time.Hour)}, licensefile.ErrCheckInDue},
		"wrong HWID":    {file, pub, licensefile.Options{Now: ok.Now, HWID: "machine-2"}, licensefile.ErrWrongHWID},
		"wrong app":     {file, pub, licensefile.Options{Now: ok.Now, AppID: "app-2"}, licensefile.ErrWrongApp},
		"issued later":  {file, pub, licensefile.Options{Now: issued.Add(-time.Hour)}, licensefile.ErrNotYetValid},
	} {
		if _, err := licensefile.Verify(c.file, c.pub, c.o); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	// A file without a deadline-relevant binding verifies on any machine.
	p = sample()
	p.HWID, p.ExpiresAt = "", ""
	unbound, _ := licensefile.Encode(priv, p)
	if _, err := licensefile.Verify(unbound, pub, licensefile.Options{Now: issued.Add(29 * 24 * time.Hour), HWID: "any"}); err != nil {
		t.Fatalf("unbound file: %v", err)
	}
}

// TestCanonicalPayload: the payload is JSON with sorted members and no spaces.
func TestCanonicalPayload(t *testing.T) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	file, _ := licensefile.Encode(priv, sample())
	p, err := licensefile.Decode(file, priv.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(p)
	var generic map[string]any
	_ = json.Unmarshal(got, &generic)
	sorted, _ := json.Marshal(generic) // maps marshal with sorted keys
	if !bytes.Equal(bytes.ReplaceAll(got, []byte(`\u0026`), []byte("&")), bytes.ReplaceAll(sorted, []byte(`\u0026`), []byte("&"))) {
		t.Fatalf("members not in sorted order:\n%s\n%s", got, sorted)
	}
}

func equal(a, b licensefile.Payload) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return bytes.Equal(x, y)
}

// TestOneSpelling: a file has exactly one valid inner text. Base64 of a length that is not
// a multiple of 3 leaves unused bits in its last character; a decoder that ignores them
// accepts several spellings of the same bytes (the signature's last character changed
// still verified). Every other character in the last place of the payload and of the
// signature is refused as malformed, for payloads of each length modulo 3.
func TestOneSpelling(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
	ok := licensefile.Options{Now: issued.Add(time.Hour)}
	seen := map[int]bool{}
	for _, key := range []string{"K", "KE", "KEY"} {
		p := sample()
		p.Key = key
		file, err := licensefile.Encode(priv, p)
		if err != nil {
			t.Fatal(err)
		}
		text := string(file)
		inner := strings.Join(strings.Fields(strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(text), licensefile.BeginLine), licensefile.EndLine)), "")
		p64, s64, _ := strings.Cut(inner, ".")
		seen[len(p64)%4] = true
		if _, err := licensefile.Verify(file, pub, ok); err != nil {
			t.Fatalf("canonical file: %v", err)
		}
		for _, part := range []struct {
			name string
			at   int // index in inner of the last character of the part
		}{{"payload", len(p64) - 1}, {"signature", len(p64) + 1 + len(s64) - 1}} {
			accepted := 0
			for _, ch := range alphabet {
				if byte(ch) == inner[part.at] {
					continue
				}
				other := inner[:part.at] + string(ch) + inner[part.at+1:]
				respelled := []byte(licensefile.BeginLine + "\n" + other + "\n" + licensefile.EndLine + "\n")
				_, err := licensefile.Verify(respelled, pub, ok)
				if err == nil {
					accepted++
					continue
				}
				if !errors.Is(err, licensefile.ErrMalformed) && !errors.Is(err, licensefile.ErrBadSignature) {
					t.Errorf("%s ending %q: %v", part.name, ch, err)
				}
			}
			if accepted > 0 {
				t.Errorf("key %q: %d other spellings of the %s's last character verify", key, accepted, part.name)
			}
		}
	}
	if !seen[2] || !seen[3] {
		t.Fatalf("payload lengths modulo 4 covered: %v, want 2 and 3", seen)
	}
}
