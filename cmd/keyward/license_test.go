package main

import (
	"bytes"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/pkg/licensefile"
)

// TestLicenseVerify runs `keyward license verify` on files made with the app's key: no
// server, only the public key and the file.
func TestLicenseVerify(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	other, _, _ := ed25519.GenerateKey(rand.Reader)
	now := time.Now().UTC()
	write := func(name string, p licensefile.Payload) string {
		b, err := licensefile.Encode(priv, p)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	good := write("good.lic", licensefile.Payload{AppID: "app-1", Key: "PRO-AAAAA", Level: 2, HWID: "m1",
		IssuedAt: now.Add(-time.Hour).Format(time.RFC3339), CheckInBy: now.Add(time.Hour).Format(time.RFC3339)})
	due := write("due.lic", licensefile.Payload{AppID: "app-1", Key: "PRO-BBBBB",
		IssuedAt: now.Add(-48 * time.Hour).Format(time.RFC3339), CheckInBy: now.Add(-time.Hour).Format(time.RFC3339)})
	keyFile := filepath.Join(t.TempDir(), "key.b64")
	_ = os.WriteFile(keyFile, []byte(base64.StdEncoding.EncodeToString(pub)+"\n"), 0o600)
	b64 := base64.StdEncoding.EncodeToString(pub)
	for _, c := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"license", "verify", "--public-key", b64, good}, 0, `"key": "PRO-AAAAA"`},
		{[]string{"license", "verify", "--public-key", "@" + keyFile, "--hwid", "m1", "--app-id", "app-1", good}, 0, "valid"},
		{[]string{"license", "verify", "--public-key", b64, "--hwid", "m2", good}, 1, "another machine"},
		{[]string{"license", "verify", "--public-key", base64.StdEncoding.EncodeToString(other), good}, 1, "signature does not match"},
		{[]string{"license", "verify", "--public-key", b64, due}, 1, "check-in deadline"},
		{[]string{"license", "verify", good}, 2, "usage"},
		{[]string{"license", "verify", "--public-key", "nope", good}, 2, "Ed25519"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(c.args, &stdout, &stderr)
		if code != c.code || !strings.Contains(stdout.String()+stderr.String(), c.out) {
			t.Errorf("%v: exit %d, want %d with %q:\n%s%s", c.args, code, c.code, c.out, stdout.String(), stderr.String())
		}
	}
}
