package signedresponse_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/pkg/signedresponse"
)

// signed answers the headers of an answer signed by priv at ts.
func signed(priv ed25519.PrivateKey, ts string, req signedresponse.Request, a signedresponse.Answer) http.Header {
	h := http.Header{}
	h.Set(signedresponse.HeaderVersion, signedresponse.Version)
	h.Set(signedresponse.HeaderTimestamp, ts)
	h.Set(signedresponse.HeaderSignature, signedresponse.Sign(priv, ts, req, a))
	if a.FileHash != "" {
		h.Set(signedresponse.HeaderFileHash, a.FileHash)
	}
	return h
}

func with(h http.Header, name, value string) http.Header {
	c := h.Clone()
	if value == "" {
		c.Del(name)
	} else {
		c.Set(name, value)
	}
	return c
}

func TestVerify(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	other, _, _ := ed25519.GenerateKey(rand.Reader)
	now := time.Unix(1_800_000_000, 0)
	ts := strconv.FormatInt(now.Unix(), 10)
	req := signedresponse.Request{Method: "POST", Path: "/api/client/heartbeat", Body: []byte(`{"sessionToken":"tok-a"}`),
		Nonce: "nonce-1", Challenge: "challenge-1"}
	answer := signedresponse.Answer{Status: 200, Body: []byte(`{"success":true,"data":{"valid":true}}`)}
	h := signed(priv, ts, req, answer)
	if err := signedresponse.Verify(pub, req, h, answer, now.Add(4*time.Minute), -1); err != nil {
		t.Fatalf("Verify: %v", err)
	}
	sig := h.Get(signedresponse.HeaderSignature)
	// A version-1 signature: the timestamp followed by the body, no version header.
	v1 := http.Header{}
	v1.Set(signedresponse.HeaderTimestamp, ts)
	v1.Set(signedresponse.HeaderSignature, hex.EncodeToString(ed25519.Sign(priv, append([]byte(ts), answer.Body...))))
	// A license file's signature over its payload, offered with its prefix as the timestamp.
	licensePayload := []byte(`{"appId":"a","v":1}`)
	licenseSig := hex.EncodeToString(ed25519.Sign(priv, append([]byte("keyward-license-v1\n"), licensePayload...)))
	asLicense := with(with(h, signedresponse.HeaderTimestamp, "keyward-license-v1\n"), signedresponse.HeaderSignature, licenseSig)

	otherReq := func(f func(r *signedresponse.Request)) signedresponse.Request {
		r := req
		f(&r)
		return r
	}
	for name, c := range map[string]struct {
		pub    ed25519.PublicKey
		req    signedresponse.Request
		h      http.Header
		answer signedresponse.Answer
		now    time.Time
		want   error
	}{
		"altered body":      {pub, req, h, signedresponse.Answer{Status: 200, Body: []byte(`{"success":true,"data":{"valid":fals}}`)}, now, signedresponse.ErrBadSignature},
		"other status":      {pub, req, h, signedresponse.Answer{Status: 201, Body: answer.Body}, now, signedresponse.ErrBadSignature},
		"other key":         {other, req, h, answer, now, signedresponse.ErrBadSignature},
		"moved time":        {pub, req, with(h, signedresponse.HeaderTimestamp, strconv.FormatInt(now.Unix()+1, 10)), answer, now, signedresponse.ErrBadSignature},
		"other session":     {pub, otherReq(func(r *signedresponse.Request) { r.Body = []byte(`{"sessionToken":"tok-b"}`) }), h, answer, now, signedresponse.ErrBadSignature},
		"other path":        {pub, otherReq(func(r *signedresponse.Request) { r.Path = "/api/client/check" }), h, answer, now, signedresponse.ErrBadSignature},
		"other method":      {pub, otherReq(func(r *signedresponse.Request) { r.Method = "GET" }), h, answer, now, signedresponse.ErrBadSignature},
		"other nonce":       {pub, otherReq(func(r *signedresponse.Request) { r.Nonce = "nonce-2" }), h, answer, now, signedresponse.ErrBadSignature},
		"no nonce":          {pub, otherReq(func(r *signedresponse.Request) { r.Nonce = "" }), h, answer, now, signedresponse.ErrBadSignature},
		"other challenge":   {pub, otherReq(func(r *signedresponse.Request) { r.Challenge = "challenge-2" }), h, answer, now, signedresponse.ErrBadSignature},
		"as a download":     {pub, req, h, signedresponse.Answer{Status: 200, FileHash: string(answer.Body)}, now, signedresponse.ErrBadSignature},
		"not hex":           {pub, req, with(h, signedresponse.HeaderSignature, strings.Repeat("zz", 64)), answer, now, signedresponse.ErrMalformed},
		"upper-case hex":    {pub, req, with(h, signedresponse.HeaderSignature, strings.ToUpper(sig)), answer, now, signedresponse.ErrMalformed},
		"short":             {pub, req, with(h, signedresponse.HeaderSignature, sig[:126]), answer, now, signedresponse.ErrMalformed},
		"signed timestamp":  {pub, req, with(h, signedresponse.HeaderTimestamp, "+"+ts), answer, now, signedresponse.ErrMalformed},
		"spaced timestamp":  {pub, req, with(h, signedresponse.HeaderTimestamp, ts+" "), answer, now, signedresponse.ErrMalformed},
		"exponent":          {pub, req, with(h, signedresponse.HeaderTimestamp, "1.8e9"), answer, now, signedresponse.ErrMalformed},
		"long timestamp":    {pub, req, with(h, signedresponse.HeaderTimestamp, "0"+strings.Repeat("1", 18)), answer, now, signedresponse.ErrMalformed},
		"license signature": {pub, signedresponse.Request{}, asLicense, signedresponse.Answer{Body: licensePayload}, now, signedresponse.ErrMalformed},
		"unsigned":          {pub, req, http.Header{}, answer, now, signedresponse.ErrUnsigned},
		"no signature":      {pub, req, with(h, signedresponse.HeaderSignature, ""), answer, now, signedresponse.ErrUnsigned},
		"version 1":         {pub, req, v1, answer, now, signedresponse.ErrVersion},
		"version 3":         {pub, req, with(h, signedresponse.HeaderVersion, "3"), answer, now, signedresponse.ErrVersion},
		"short key":         {pub[:31], req, h, answer, now, signedresponse.ErrBadKey},
		"replayed late":     {pub, req, h, answer, now.Add(6 * time.Minute), signedresponse.ErrStale},
		"from future":       {pub, req, h, answer, now.Add(-6 * time.Minute), signedresponse.ErrStale},
	} {
		if err := signedresponse.Verify(c.pub, c.req, c.h, c.answer, c.now, signedresponse.DefaultWindow); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", name, err, c.want)
		}
	}

	// A download is checked over its hash, not its bytes.
	dl := signedresponse.Request{Method: "POST", Path: "/api/client/file", Body: []byte(`{"name":"Game","sessionToken":"t"}`)}
	hd := signed(priv, ts, dl, signedresponse.Answer{Status: 200, FileHash: "ab12"})
	if err := signedresponse.VerifyResponse(pub, dl, hd, 200, []byte("file bytes"), now); err != nil {
		t.Fatalf("download: %v", err)
	}
	// A server that hashed the body as it streamed signs the same message.
	sum := sha256.Sum256(req.Body)
	streamed := req
	streamed.Body, streamed.BodySHA256 = nil, sum[:]
	if err := signedresponse.Verify(pub, req, signed(priv, ts, streamed, answer), answer, now, -1); err != nil {
		t.Fatalf("body digest given: %v", err)
	}
}

// TestMessage pins the signed bytes: a change here breaks every verifier in the field.
func TestMessage(t *testing.T) {
	req := signedresponse.Request{Method: "POST", Path: "/api/client/check-license", Body: []byte("{}"), Challenge: "c"}
	got := string(signedresponse.Message("1800000000", req, signedresponse.Answer{Status: 403, Body: []byte("{\"success\":false}\n")}))
	want := "keyward-response-v2\n1800000000\n403\nPOST\n/api/client/check-license\n" +
		"44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a\n\nc\nbody\n{\"success\":false}\n"
	if got != want {
		t.Fatalf("Message:\n%q\nwant\n%q", got, want)
	}
	got = string(signedresponse.Message("7", signedresponse.Request{Method: "POST", Path: "/api/client/file"}, signedresponse.Answer{Status: 200, FileHash: "ab"}))
	want = "keyward-response-v2\n7\n200\nPOST\n/api/client/file\ne3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\n\n\nfile-sha256\nab"
	if got != want {
		t.Fatalf("download Message:\n%q\nwant\n%q", got, want)
	}
}

func TestRequestOf(t *testing.T) {
	r, _ := http.NewRequest("POST", "https://k.example/api/client/heart%2Fbeat?x=1", nil)
	r.Header.Set("X-Nonce", "n")
	r.Header.Set("X-Signature-Challenge", "c")
	got := signedresponse.RequestOf(r, []byte("b"))
	if got.Method != "POST" || got.Path != "/api/client/heart%2Fbeat" || string(got.Body) != "b" || got.Nonce != "n" || got.Challenge != "c" {
		t.Fatalf("RequestOf = %+v", got)
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
	// 32 bytes in base64 leave 2 unused bits in the last character: set, they spell the
	// same key another way, which is refused.
	b64 := base64.StdEncoding.EncodeToString(pub)
	const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
	respelled := b64[:42] + string(alphabet[strings.IndexByte(alphabet, b64[42])^1]) + "="
	for _, s := range []string{"", "abc", base64.StdEncoding.EncodeToString([]byte("short")), respelled, b64[:20] + "\n" + b64[20:]} {
		if _, err := signedresponse.ParsePublicKey(s); !errors.Is(err, signedresponse.ErrBadKey) {
			t.Errorf("ParsePublicKey(%q) = %v, want ErrBadKey", s, err)
		}
	}
}

var benchReq = signedresponse.Request{Method: "POST", Path: "/api/client/heartbeat", Body: []byte(`{"sessionToken":"0123456789abcdef0123456789abcdef"}`), Nonce: "0123456789abcdef"}

// BenchmarkSign is the server's cost per signed answer (a 1 KiB body).
func BenchmarkSign(b *testing.B) {
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	a := signedresponse.Answer{Status: 200, Body: make([]byte, 1024)}
	for b.Loop() {
		signedresponse.Sign(priv, "1800000000", benchReq, a)
	}
}

func BenchmarkVerify(b *testing.B) {
	pub, priv, _ := ed25519.GenerateKey(rand.Reader)
	a := signedresponse.Answer{Status: 200, Body: make([]byte, 1024)}
	h := signed(priv, "1800000000", benchReq, a)
	for b.Loop() {
		_ = signedresponse.Verify(pub, benchReq, h, a, time.Time{}, 0)
	}
}
