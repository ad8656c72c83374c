package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// VerifyKeyward is the Go snippet of SIGNATURES.md, verbatim; TestSignaturesDocGo checks
// that the document still prints exactly this function.
//
// VerifyKeyward reports whether a Keyward CUSTOM webhook request is authentic and fresh.
// h is the request's headers and body its raw body, read before any JSON decoding.
func VerifyKeyward(secret string, h http.Header, body []byte, now time.Time) bool {
	ts, err := strconv.ParseInt(h.Get("X-Keyward-Timestamp"), 10, 64)
	if err != nil {
		return false
	}
	if age := now.Sub(time.Unix(ts, 0)); age > 5*time.Minute || age < -5*time.Minute {
		return false // too old or from the future: possibly a replay
	}
	hexSig, ok := strings.CutPrefix(h.Get("X-Keyward-Signature"), "sha256=")
	if !ok {
		return false
	}
	sig, err := hex.DecodeString(hexSig)
	if err != nil {
		return false
	}
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(strconv.FormatInt(ts, 10) + "."))
	mac.Write(body)
	return hmac.Equal(sig, mac.Sum(nil)) // constant-time
}

// docBlock returns the fenced block of SIGNATURES.md in lang whose text starts with prefix.
func docBlock(t *testing.T, lang, prefix string) string {
	t.Helper()
	doc, err := os.ReadFile("SIGNATURES.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, part := range strings.Split(string(doc), "```"+lang+"\n")[1:] {
		block, _, ok := strings.Cut(part, "```")
		if ok && strings.HasPrefix(block, prefix) {
			return block
		}
	}
	t.Fatalf("SIGNATURES.md has no %s block starting with %q", lang, prefix)
	return ""
}

// signedSample is a CUSTOM request built and signed by this package, as a receiver sees it.
func signedSample(t *testing.T, secret string, at time.Time) (http.Header, []byte) {
	t.Helper()
	req, err := BuildAt(KindCustom, "https://hooks.example.com/", sampleEvent(), secret, at)
	if err != nil {
		t.Fatal(err)
	}
	return req.Header, readBody(t, req)
}

func TestSignaturesDocGo(t *testing.T) {
	block := docBlock(t, "go", "// VerifyKeyward")
	src, err := os.ReadFile("signatures_test.go")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(src), block) {
		t.Fatal("the Go snippet in SIGNATURES.md differs from VerifyKeyward in signatures_test.go")
	}

	now := time.Now()
	h, body := signedSample(t, "whsec_doc", now)
	cases := []struct {
		name   string
		secret string
		body   []byte
		now    time.Time
		want   bool
	}{
		{"genuine", "whsec_doc", body, now, true},
		{"wrong secret", "whsec_other", body, now, false},
		{"tampered body", "whsec_doc", append([]byte(nil), append(body, ' ')...), now, false},
		{"replayed late", "whsec_doc", body, now.Add(6 * time.Minute), false},
	}
	for _, c := range cases {
		snippet := VerifyKeyward(c.secret, h, c.body, c.now)
		ts, _ := strconv.ParseInt(h.Get(HeaderTimestamp), 10, 64)
		reference := Verify(c.secret, h.Get(HeaderSignature), ts, c.body, c.now, DefaultTolerance)
		if snippet != c.want || reference != c.want {
			t.Errorf("%s: snippet %v, Verify %v, want %v", c.name, snippet, reference, c.want)
		}
	}
	vh := http.Header{}
	vh.Set(HeaderTimestamp, strconv.FormatInt(vectorTime, 10))
	vh.Set(HeaderSignature, vectorSig)
	if !VerifyKeyward(vectorSecret, vh, []byte(vectorBody), time.Unix(vectorTime, 0)) {
		t.Error("the snippet rejects the documented example")
	}
}

func TestSignaturesDocPython(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("python3 is not installed; the Python snippet is not checked")
	}
	snippet := docBlock(t, "python", "import hashlib")
	dir := t.TempDir()
	driver := snippet + `
import json, sys

class Headers(dict):
    # Case-insensitive like Flask's and Django's request.headers.
    def get(self, key, default=None):
        for k, v in self.items():
            if k.lower() == key.lower():
                return v
        return default

for case in json.load(open(sys.argv[1])):
    body = open(case["body"], "rb").read()
    print(verify_keyward(case["secret"], Headers(case["headers"]), body))
`
	now := time.Now()
	h, body := signedSample(t, "whsec_py", now)
	oldH, oldBody := signedSample(t, "whsec_py", now.Add(-10*time.Minute))
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	flat := func(h http.Header) map[string]string {
		m := map[string]string{}
		for k := range h {
			m[strings.ToLower(k)] = h.Get(k) // lower-case: the snippet must not depend on case
		}
		return m
	}
	type pyCase struct {
		Secret  string            `json:"secret"`
		Headers map[string]string `json:"headers"`
		Body    string            `json:"body"`
	}
	cases := []pyCase{
		{"whsec_py", flat(h), write("genuine", body)},
		{"whsec_other", flat(h), write("wrong-secret", body)},
		{"whsec_py", flat(h), write("tampered", append(append([]byte(nil), body...), ' '))},
		{"whsec_py", flat(oldH), write("old", oldBody)},
		{"whsec_py", map[string]string{}, write("unsigned", body)},
	}
	want := "True\nFalse\nFalse\nFalse\nFalse\n"
	spec, _ := json.Marshal(cases)
	out, err := exec.Command(python, write("driver.py", []byte(driver)), write("cases.json", spec)).CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	if string(out) != want {
		t.Fatalf("python snippet answered\n%s\nwant\n%s", out, want)
	}
}
