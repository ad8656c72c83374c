package httpapi_test

import (
	"bytes"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	ts "github.com/keyward/keyward/internal/testserver"
	"github.com/keyward/keyward/pkg/signedresponse"
)

// docSnippet answers the first fenced block of lang in docs/LICENSING.md.
func docSnippet(t *testing.T, lang string) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "LICENSING.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, found := strings.Cut(string(doc), "```"+lang+"\n")
	code, _, closed := strings.Cut(rest, "```")
	if !found || !closed {
		t.Fatalf("no %s block in docs/LICENSING.md", lang)
	}
	return code
}

// TestSignatureSnippets runs the Python and JavaScript verification snippets of
// docs/LICENSING.md, as printed there, on a real signed answer and on an altered one. A
// snippet whose interpreter (or Python's cryptography package) is not installed is
// skipped, and says so.
func TestSignatureSnippets(t *testing.T) {
	s := ts.Start(t, ts.Pairs[0])
	a := api{t, s, newOwner(t, s).Token}
	appID, secret := a.createApp("Snippets")
	expectOK(t, a.do("PATCH", "/api/apps/"+appID, map[string]any{"signResponses": true}), http.StatusOK)
	r := a.do("GET", "/api/apps/"+appID, nil)
	pk := r.Data()["publicKey"].(map[string]any)
	c := newSDK(t, s, secret)
	r = c.init("1.0.0", "h")
	expectOK(t, r, http.StatusOK)
	stamp, sig := r.Header.Get(signedresponse.HeaderTimestamp), r.Header.Get(signedresponse.HeaderSignature)
	if sig == "" {
		t.Fatalf("unsigned init: %v", r.Header)
	}
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	body := write("body", r.Raw)
	altered := write("altered", bytes.Replace(r.Raw, []byte(`"resumed":false`), []byte(`"resumed":true `), 1))
	pemFile := write("key.pem", []byte(pk["pem"].(string)))

	run := func(t *testing.T, name string, args ...string) {
		for _, c := range []struct {
			file string
			want bool
		}{{body, true}, {altered, false}} {
			cmd := exec.Command(name, append(args, stamp, sig, c.file)...)
			out, err := cmd.CombinedOutput()
			if got := err == nil; got != c.want {
				t.Errorf("%s on %s: verified=%v, want %v: %v %s", name, filepath.Base(c.file), got, c.want, err, out)
			}
			if ee, isExit := err.(*exec.ExitError); err != nil && (!isExit || ee.ExitCode() != 1) {
				t.Errorf("%s did not run: %v %s", name, err, out)
			}
		}
	}
	t.Run("python", func(t *testing.T) {
		if _, err := exec.LookPath("python3"); err != nil {
			t.Skip("python3 is not installed")
		}
		if err := exec.Command("python3", "-c", "import cryptography").Run(); err != nil {
			t.Skip("the Python cryptography package is not installed")
		}
		run(t, "python3", write("verify.py", []byte(docSnippet(t, "python"))), pk["base64"].(string))
	})
	t.Run("javascript", func(t *testing.T) {
		if _, err := exec.LookPath("node"); err != nil {
			t.Skip("node is not installed")
		}
		run(t, "node", write("verify.js", []byte(docSnippet(t, "javascript"))), pemFile)
	})
}
