package httpapi_test

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	ts "github.com/keyward/keyward/internal/testserver"
	"github.com/keyward/keyward/pkg/signedresponse"
)

func licensingDoc(t *testing.T) string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "docs", "LICENSING.md"))
	if err != nil {
		t.Fatal(err)
	}
	return string(doc)
}

// docSnippet answers the first fenced block of lang in docs/LICENSING.md.
func docSnippet(t *testing.T, lang string) string {
	t.Helper()
	blocks := docBlocks(t, licensingDoc(t), lang)
	if len(blocks) == 0 {
		t.Fatalf("no %s block in docs/LICENSING.md", lang)
	}
	return blocks[0]
}

// docBlocks answers the fenced blocks of lang in text, in order.
func docBlocks(t *testing.T, text, lang string) []string {
	t.Helper()
	var out []string
	for {
		_, rest, found := strings.Cut(text, "```"+lang+"\n")
		if !found {
			return out
		}
		code, after, closed := strings.Cut(rest, "```")
		if !closed {
			t.Fatalf("unclosed %s block in docs/LICENSING.md", lang)
		}
		out = append(out, code)
		text = after
	}
}

// exchange is one request and its answer as the snippets' command lines read them
// (EXCHANGE_JSON, the request body file and the response body file).
type exchange struct {
	Method    string            `json:"method"`
	Path      string            `json:"path"`
	Nonce     string            `json:"nonce"`
	Challenge string            `json:"challenge"`
	Status    int               `json:"status"`
	Headers   map[string]string `json:"headers"`
	Now       *int64            `json:"now,omitempty"` // nil: the snippet's own clock
	sent      []byte
	body      []byte
	pub       ed25519.PublicKey
}

func exchangeOf(pub ed25519.PublicKey, req signedresponse.Request, r ts.Response, now int64) exchange {
	x := exchange{Method: req.Method, Path: req.Path, Nonce: req.Nonce, Challenge: req.Challenge, Status: r.Status,
		Headers: map[string]string{}, Now: &now, sent: req.Body, body: r.Raw, pub: pub}
	for _, name := range []string{signedresponse.HeaderVersion, signedresponse.HeaderTimestamp, signedresponse.HeaderSignature, signedresponse.HeaderFileHash} {
		if v := r.Header.Get(name); v != "" {
			x.Headers[name] = v
		}
	}
	return x
}

// change answers a copy of x changed by f (headers and bodies copied).
func (x exchange) change(f func(y *exchange)) exchange {
	y := x
	y.Headers = map[string]string{}
	for k, v := range x.Headers {
		y.Headers[k] = v
	}
	y.sent, y.body = bytes.Clone(x.sent), bytes.Clone(x.body)
	f(&y)
	return y
}

func (x exchange) withHeader(name, value string) exchange {
	return x.change(func(y *exchange) {
		if value == "" {
			delete(y.Headers, name)
		} else {
			y.Headers[name] = value
		}
	})
}

// goVerdict is pkg/signedresponse's answer on x.
func (x exchange) goVerdict() error {
	h := http.Header{}
	for k, v := range x.Headers {
		h.Set(k, v)
	}
	now := time.Now()
	if x.Now != nil {
		now = time.Unix(*x.Now, 0)
	}
	req := signedresponse.Request{Method: x.Method, Path: x.Path, Body: x.sent, Nonce: x.Nonce, Challenge: x.Challenge}
	return signedresponse.VerifyResponse(x.pub, req, h, x.Status, x.body, now)
}

// TestSignatureSnippets runs the Python and JavaScript verification snippets of
// docs/LICENSING.md, as printed there, on the worked example and on real answers of a
// running server: genuine, altered, relayed to another request, and every malformed form
// pkg/signedresponse refuses. Each snippet must accept exactly what pkg/signedresponse
// accepts, and refuse by its exit code 1, not by a crash. A snippet whose interpreter (or
// Python's cryptography package) is not installed is skipped, and says so.
func TestSignatureSnippets(t *testing.T) {
	s := ts.Start(t, ts.Pairs[0])
	a := api{t, s, newOwner(t, s).Token}
	appID, secret := a.createApp("Snippets")
	expectOK(t, a.do("PATCH", "/api/apps/"+appID, map[string]any{"signResponses": true}), http.StatusOK)
	pub := publicKeyOf(t, a, appID)
	uploadFile(a, appID, "Game", "1.0.0", bytes.Repeat([]byte("snippet-bytes"), 50))
	now := func() int64 { return s.Clock().Now().Unix() }

	c := newSDK(t, s, secret)
	c.mustInit()
	_, r := c.signedNonceCall("register", map[string]any{"username": "snippet", "password": "pw-snippet-1", "hwid": "h"})
	expectOK(t, r, http.StatusOK)
	req, r := c.signedCall("heartbeat", nil, c.nonce(), "challenge-1")
	expectOK(t, r, http.StatusOK)
	beat := exchangeOf(pub, req, r, now())
	other := newSDK(t, s, secret)
	other.mustInit()
	otherReq, _ := other.signedNonceCall("heartbeat", nil)
	req, r = c.signedCall("heartbeat", nil, "", "")
	expect(t, r, http.StatusUnauthorized, "NONCE_REQUIRED")
	refusal := exchangeOf(pub, req, r, now())
	_, key := createLicenseRecord(a, appID, nil)
	req, r = c.signedCall("check-license", map[string]any{"licenseKey": key}, "", "")
	expectOK(t, r, http.StatusOK)
	check := exchangeOf(pub, req, r, now())
	otherKeyReq, _ := c.signedCall("check-license", map[string]any{"licenseKey": "NO-SUCH-KEY"}, "", "")
	resp, got := c.download(map[string]any{"name": "Game"}, "")
	sent, _ := json.Marshal(map[string]any{"name": "Game", "sessionToken": c.token}) // what download sent
	download := exchangeOf(pub, signedresponse.Request{Method: "POST", Path: "/api/client/file", Body: sent},
		ts.Response{Status: resp.StatusCode, Header: resp.Header, Raw: got}, now())
	if download.Headers[signedresponse.HeaderFileHash] == "" {
		t.Fatalf("download: %d %v", resp.StatusCode, resp.Header)
	}

	// A license file's own signature, offered as an answer's with its prefix as the
	// timestamp (the JavaScript snippet accepted it: Number("keyward-license-v1") is NaN).
	licID, _ := createLicenseRecord(a, appID, nil)
	r = a.do("POST", "/api/apps/"+appID+"/licenses/"+licID+"/file", nil)
	expectOK(t, r, http.StatusOK)
	_, inner, _ := strings.Cut(r.Data()["file"].(string), "-----BEGIN KEYWARD LICENSE-----")
	inner, _, _ = strings.Cut(inner, "-----END KEYWARD LICENSE-----")
	p64, s64, _ := strings.Cut(strings.Join(strings.Fields(inner), ""), ".")
	licPayload, err1 := base64.RawURLEncoding.DecodeString(p64)
	licSig, err2 := base64.RawURLEncoding.DecodeString(s64)
	if err1 != nil || err2 != nil {
		t.Fatalf("license file: %v %v", err1, err2)
	}
	licenseAsAnswer := exchange{Method: "POST", Path: "/api/client/check", Status: 200, pub: pub, body: licPayload, Now: beat.Now,
		Headers: map[string]string{signedresponse.HeaderVersion: "2", signedresponse.HeaderTimestamp: "keyward-license-v1\n",
			signedresponse.HeaderSignature: hex.EncodeToString(licSig)}}

	example := workedExample(t)
	ts0 := beat.Headers[signedresponse.HeaderTimestamp]
	sig := beat.Headers[signedresponse.HeaderSignature]
	cases := []struct {
		name   string
		x      exchange
		accept bool
	}{
		{"heartbeat", beat, true},
		{"heartbeat on the snippet's clock", beat.change(func(y *exchange) { y.Now = nil }), true},
		{"signed refusal", refusal, true},
		{"check-license", check, true},
		{"download", download, true},
		{"worked example", example, true},
		{"worked example 301 s later", example.change(func(y *exchange) { later := *y.Now + 301; y.Now = &later }), false},
		{"altered body", beat.change(func(y *exchange) {
			y.body = bytes.Replace(y.body, []byte(`"expiresAt":"`), []byte(`"expiresAt":"1`), 1)
		}), false},
		{"relayed to another session", beat.change(func(y *exchange) { y.sent, y.Nonce = otherReq.Body, otherReq.Nonce }), false},
		{"relayed to another key", check.change(func(y *exchange) { y.sent = otherKeyReq.Body }), false},
		{"another nonce", beat.change(func(y *exchange) { y.Nonce += "x" }), false},
		{"another challenge", beat.change(func(y *exchange) { y.Challenge = "challenge-2" }), false},
		{"another path", beat.change(func(y *exchange) { y.Path = "/api/client/check" }), false},
		{"another status", beat.change(func(y *exchange) { y.Status = http.StatusCreated }), false},
		{"download as a body", download.change(func(y *exchange) {
			y.body = []byte(y.Headers[signedresponse.HeaderFileHash])
			delete(y.Headers, signedresponse.HeaderFileHash)
		}), false},
		{"no version (version 1)", beat.withHeader(signedresponse.HeaderVersion, ""), false},
		{"version 1", beat.withHeader(signedresponse.HeaderVersion, "1"), false},
		{"version 2 spaced", beat.withHeader(signedresponse.HeaderVersion, "2 "), false},
		{"unsigned", beat.withHeader(signedresponse.HeaderSignature, ""), false},
		{"no timestamp", beat.withHeader(signedresponse.HeaderTimestamp, ""), false},
		{"license signature", licenseAsAnswer, false},
		{"license signature without version", licenseAsAnswer.withHeader(signedresponse.HeaderVersion, ""), false},
		{"non-numeric timestamp", beat.withHeader(signedresponse.HeaderTimestamp, "keyward"), false},
		{"signed timestamp", beat.withHeader(signedresponse.HeaderTimestamp, "+"+ts0), false},
		{"timestamp with a space", beat.withHeader(signedresponse.HeaderTimestamp, " "+ts0), false},
		{"timestamp with a line feed", beat.withHeader(signedresponse.HeaderTimestamp, ts0+"\n"), false},
		{"timestamp with a point", beat.withHeader(signedresponse.HeaderTimestamp, ts0+".0"), false},
		{"exponent timestamp", beat.withHeader(signedresponse.HeaderTimestamp, "1.8e9"), false},
		{"hex timestamp", beat.withHeader(signedresponse.HeaderTimestamp, "0x6b49d200"), false},
		{"19-digit timestamp", beat.withHeader(signedresponse.HeaderTimestamp, "0"+strings.Repeat("0", 18-len(ts0))+ts0), false},
		{"upper-case signature", beat.withHeader(signedresponse.HeaderSignature, strings.ToUpper(sig)), false},
		{"spaced signature", beat.withHeader(signedresponse.HeaderSignature, sig[:2]+" "+sig[2:]), false},
		{"short signature", beat.withHeader(signedresponse.HeaderSignature, sig[:126]), false},
		{"long signature", beat.withHeader(signedresponse.HeaderSignature, sig+"00"), false},
		{"replayed late", beat.change(func(y *exchange) { later := *y.Now + 301; y.Now = &later }), false},
		{"from the future", beat.change(func(y *exchange) { earlier := *y.Now - 301; y.Now = &earlier }), false},
	}
	for _, c := range cases {
		if err := c.x.goVerdict(); (err == nil) != c.accept {
			t.Errorf("pkg/signedresponse on %s: %v, want accepted=%v", c.name, err, c.accept)
		}
	}

	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	pemOf := func(k ed25519.PublicKey) string {
		der, _ := x509.MarshalPKIXPublicKey(k)
		return write("key-"+hex.EncodeToString(k[:4])+".pem", pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
	}
	run := func(t *testing.T, cmdline func(k ed25519.PublicKey) []string) {
		for i, c := range cases {
			x, _ := json.Marshal(c.x)
			args := append(cmdline(c.x.pub), write("x"+strconv.Itoa(i)+".json", x),
				write("sent"+strconv.Itoa(i), c.x.sent), write("body"+strconv.Itoa(i), c.x.body))
			cmd := exec.Command(args[0], args[1:]...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			err := cmd.Run()
			if got := err == nil; got != (c.x.goVerdict() == nil) {
				t.Errorf("%s on %s: accepted=%v, pkg/signedresponse: %v; %s", args[0], c.name, got, c.x.goVerdict(), stderr.Bytes())
			}
			var ee *exec.ExitError
			if err != nil && (!errors.As(err, &ee) || ee.ExitCode() != 1 || stderr.Len() > 0) {
				t.Errorf("%s on %s: did not refuse cleanly: %v %s", args[0], c.name, err, stderr.Bytes())
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
		script := write("verify.py", []byte(docSnippet(t, "python")))
		run(t, func(k ed25519.PublicKey) []string {
			return []string{"python3", script, base64.StdEncoding.EncodeToString(k)}
		})
	})
	t.Run("javascript", func(t *testing.T) {
		if _, err := exec.LookPath("node"); err != nil {
			t.Skip("node is not installed")
		}
		script := write("verify.js", []byte(docSnippet(t, "javascript")))
		run(t, func(k ed25519.PublicKey) []string { return []string{"node", script, pemOf(k)} })
	})
}

// workedExample reads the worked example of docs/LICENSING.md and checks it: the key is
// the one of the zero seed, the signed message shown is Message of the request and answer
// shown, and the signature shown is that key's signature of it.
func workedExample(t *testing.T) exchange {
	t.Helper()
	doc := licensingDoc(t)
	_, section, found := strings.Cut(doc, "### Worked example")
	if !found {
		t.Fatal("docs/LICENSING.md has no worked example")
	}
	section, _, _ = strings.Cut(section, "\n### ")
	key := ed25519.NewKeyFromSeed(make([]byte, ed25519.SeedSize))
	pub := key.Public().(ed25519.PublicKey)
	if !strings.Contains(section, "`"+base64.StdEncoding.EncodeToString(pub)+"`") {
		t.Fatalf("the worked example does not show the zero seed's public key %s", base64.StdEncoding.EncodeToString(pub))
	}
	blocks, message := docBlocks(t, section, "http"), docBlocks(t, section, "text")
	if len(blocks) != 2 || len(message) != 1 {
		t.Fatalf("the worked example has %d http and %d text blocks, want 2 and 1", len(blocks), len(message))
	}
	// head answers the first line, the headers and the body of an http block.
	head := func(block string) (string, http.Header, string) {
		top, body, _ := strings.Cut(block, "\n\n")
		tp := bufio.NewReader(strings.NewReader(top + "\n\n"))
		first, _ := tp.ReadString('\n')
		h := http.Header{}
		for {
			line, err := tp.ReadString('\n')
			name, value, ok := strings.Cut(strings.TrimSpace(line), ": ")
			if err != nil || !ok {
				break
			}
			h.Add(name, value)
		}
		return strings.TrimSpace(first), h, body
	}
	reqLine, reqHeader, reqBody := head(blocks[0])
	method, rest, _ := strings.Cut(reqLine, " ")
	path, _, _ := strings.Cut(rest, " ")
	statusLine, h, body := head(blocks[1])
	status, _ := strconv.Atoi(strings.Fields(statusLine + " x x")[1])
	x := exchange{Method: method, Path: path, Nonce: reqHeader.Get(signedresponse.HeaderNonce),
		Challenge: reqHeader.Get(signedresponse.HeaderChallenge), Status: status, Headers: map[string]string{},
		sent: []byte(strings.TrimSuffix(reqBody, "\n")), body: []byte(body), pub: pub}
	for _, name := range []string{signedresponse.HeaderVersion, signedresponse.HeaderTimestamp, signedresponse.HeaderSignature} {
		x.Headers[name] = h.Get(name)
	}
	stamp, err := strconv.ParseInt(x.Headers[signedresponse.HeaderTimestamp], 10, 64)
	if err != nil {
		t.Fatalf("worked example timestamp: %v", err)
	}
	x.Now = &stamp
	req := signedresponse.Request{Method: x.Method, Path: x.Path, Body: x.sent, Nonce: x.Nonce, Challenge: x.Challenge}
	answer := signedresponse.Answer{Status: x.Status, Body: x.body}
	ts := x.Headers[signedresponse.HeaderTimestamp]
	if got := string(signedresponse.Message(ts, req, answer)); got != message[0] {
		t.Errorf("the worked example's message is\n%q\nbut Message of its request and answer is\n%q", message[0], got)
	}
	if want := signedresponse.Sign(key, ts, req, answer); x.Headers[signedresponse.HeaderSignature] != want {
		t.Errorf("the worked example's signature is %s, want %s", x.Headers[signedresponse.HeaderSignature], want)
	}
	return x
}
