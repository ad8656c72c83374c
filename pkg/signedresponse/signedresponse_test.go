package signedresponse_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/keyward/keyward/pkg/signedresponse"
)

func TestVerify(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	other, _, _ := ed25519.GenerateKey(rand.Reader)
	now := time.Unix(1_800_000_000, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	body := []byte(`{"success":true,"data":{"valid":true}}`)
	sig := signedresponse.Sign(priv, ts, body)
	if err := signedresponse.Verify(pub, ts, body, sig, now.Add(4*time.Minute), -1); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	for name, c := range map[string]struct {
		pub  ed25519.PublicKey
		ts   string
		body []byte
		sig  string
		now  time.Time
		want error
	}{
		"altered body":  {pub, ts, []byte(`{"success":true,"data":{"valid":fals}}`), sig, now, signedresponse.ErrBadSignature},
		"other key":     {other, ts, body, sig, now, signedresponse.ErrBadSignature},
		"moved time":    {pub, strconv.FormatInt(now.Unix()+1, 10), body, sig, now, signedresponse.ErrBadSignature},
		"not hex":       {pub, ts, body, "zz", now, signedresponse.ErrBadSignature},
		"unsigned":      {pub, "", body, "", now, signedresponse.ErrUnsigned},
		"replayed late": {pub, ts, body, sig, now.Add(6 * time.Minute), signedresponse.ErrStale},
		"from future":   {pub, ts, body, sig, now.Add(-6 * time.Minute), signedresponse.ErrStale},
	} {
		if err := signedresponse.Verify(c.pub, c.ts, c.body, c.sig, c.now, signedresponse.DefaultWindow); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}
	// A download is checked over its hash, not its bytes.
	h := http.Header{}
	h.Set(signedresponse.HeaderFileHash, "ab12")
	h.Set(signedresponse.HeaderTimestamp, ts)
	h.Set(signedresponse.HeaderSignature, signedresponse.Sign(priv, ts, []byte("ab12")))
	if err := signedresponse.VerifyResponse(pub, h, 200, []byte("file bytes"), now); err != nil {
		t.Fatalf("download: %v", err)
	}
}

func TestParsePublicKey(t *testing.T) {
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	der, _ := x509.MarshalPKIXPublicKey(pub)
	for _, s := range []string{base64.StdEncoding.EncodeToString(pub), base64.RawStdEncoding.EncodeToString(pub),
		string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))} {
		got, err := signedresponse.ParsePublicKey(s)
		if err != nil || !got.Equal(pub) {
			t.Errorf("ParsePublicKey(%q) = %v, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "abc", base64.StdEncoding.EncodeToString([]byte("short"))} {
		if _, err := signedresponse.ParsePublicKey(s); !errors.Is(err, signedresponse.ErrBadKey) {
			t.Errorf("ParsePublicKey(%q) = %v, want ErrBadKey", s, err)
		}
	}
}

// BenchmarkSign is the server's cost per signed answer (a 1 KiB body).
func BenchmarkSign(b *testing.B) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	body := make([]byte, 1024)
	for b.Loop() {
		signedresponse.Sign(priv, "1800000000", body)
	}
}

func BenchmarkVerify(b *testing.B) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	body := make([]byte, 1024)
	sig := signedresponse.Sign(priv, "1800000000", body)
	for b.Loop() {
		_ = signedresponse.Verify(pub, "1800000000", body, sig, time.Time{}, 0)
	}
}
