package filecrypt_test

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/keyward/keyward/core/filecrypt"
)

// The decryptor below is what a client SDK does with a download (CLIENT-SDKS.md
// §5.2–5.3 read from the SDK side), written here without any of the package's code:
// hex-decode the X-File-Nonce header and re-encode it in lowercase, derive the keys
// with crypto/hmac from the secret itself, undo the XOR, undo the shuffle by
// replaying its swaps in reverse, open AES-256-GCM (IV ‖ ct ‖ tag) and inflate (a
// zlib stream, or raw DEFLATE as Swift's Apple Compression does).

// sdkKeys returns K_aes, K_shuf and K_xor.
func sdkKeys(secret, token string, nonce []byte) (kAES, kShuf, kXor []byte) {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(token + "|" + hex.EncodeToString(nonce)))
	master := mac.Sum(nil)
	sub := func(tag byte) []byte {
		h := sha256.New()
		h.Write(master)
		h.Write([]byte{tag})
		return h.Sum(nil)
	}
	return sub(1), sub(2), sub(3)
}

// sdkUndo43 undoes layer 4 (XOR) then layer 3 (shuffle) on a copy of body.
func sdkUndo43(kShuf, kXor, body []byte) []byte {
	data := bytes.Clone(body)
	for p := range data {
		data[p] ^= kXor[p%32]
	}
	const a, c = 0x5851F42D4C957F2D, 0x14057B7EF767814F
	var st uint64
	for i := 7; i >= 0; i-- { // bytes 0–7, little-endian
		st = st<<8 | uint64(kShuf[i])
	}
	for i := 8; i < 32; i++ {
		st ^= uint64(kShuf[i]) << (8 * (i % 8))
		st = st*a + c
	}
	if st == 0 {
		st = 0xDEADBEEFCAFE1234
	}
	n := len(data)
	swaps := make([]uint64, n)
	for i := n - 1; i >= 1; i-- {
		st = st*a + c
		swaps[i] = st % uint64(i+1)
	}
	for i := 1; i < n; i++ { // the server's swaps, last first
		j := swaps[i]
		data[i], data[j] = data[j], data[i]
	}
	return data
}

// sdkDecrypt decrypts a download; the inflater must consume the whole payload.
func sdkDecrypt(secret, token, nonceHeader string, body []byte, rawDeflate bool) ([]byte, error) {
	nonce, err := hex.DecodeString(nonceHeader)
	if err != nil || len(nonce) == 0 {
		return nil, errors.New("bad nonce header")
	}
	kAES, kShuf, kXor := sdkKeys(secret, token, nonce)
	data := sdkUndo43(kShuf, kXor, body)
	if len(data) < 28 {
		return nil, errors.New("too short")
	}
	block, err := aes.NewCipher(kAES)
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	compressed, err := gcm.Open(nil, data[:12], data[12:], nil)
	if err != nil {
		return nil, err
	}

	src := bytes.NewReader(compressed)
	var r io.ReadCloser
	if rawDeflate {
		r = flate.NewReader(src)
	} else if r, err = zlib.NewReader(src); err != nil {
		return nil, err
	}
	plain, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if err := r.Close(); err != nil {
		return nil, err
	}
	if src.Len() != 0 {
		return nil, errors.New("trailing bytes after the compressed stream")
	}
	return plain, nil
}

// The decryptor itself agrees with the §5.3 known answers: its keys match, and
// undoing layers 4 and 3 of the published bytes gives back 0x00..0x27.
func TestIndependentDecryptorKnownAnswer(t *testing.T) {
	kAES, kShuf, kXor := sdkKeys("secret-two", "tok.with-dots_and~tilde", []byte{0x00, 0xff, 0x10})
	for _, c := range []struct {
		got  []byte
		want string
	}{
		{kAES, "a6b4145eafa447fd7faa99c1c593164109a7acfa1c9b55d77d5eeb365224e092"},
		{kShuf, "eed14068c08e5903f7f508c7768601aa0af285c2b6fb939a1dab96b776bd26c9"},
		{kXor, "248ed8078448e0fe2bfc13245396cc61e25792d84f56528b065d0f0b666f05c2"},
	} {
		if got := hex.EncodeToString(c.got); got != c.want {
			t.Fatalf("key %s, want %s", got, c.want)
		}
	}
	body, _ := hex.DecodeString("309fd40d8a4be8db31f7042d778dce7fe2508efa494b4da8167c2f2d624813d73c9dd90a9647f9fb")
	got := sdkUndo43(kShuf, kXor, body)
	for i, b := range got {
		if b != byte(i) {
			t.Fatalf("undoing layers 4 and 3 gave %x", got)
		}
	}
	if len(got) != 40 {
		t.Fatalf("got %d bytes", len(got))
	}
}

type roundTripCase struct {
	name        string
	secret      string
	token       string
	nonce       []byte
	nonceHeader string // as sent; "" = NonceHex(nonce)
	plain       []byte
}

func roundTripCases(t *testing.T) []roundTripCase {
	rng := rand.New(rand.NewChaCha8([32]byte{'k', 'e', 'y', 'w', 'a', 'r', 'd'}))
	random := make([]byte, 100_000)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	nonASCII := make([]byte, 5001)
	for i := range nonASCII {
		nonASCII[i] = "héllo wörld ☃ "[i%len("héllo wörld ☃ ")]
	}
	upper, err := hex.DecodeString("ABCDEF0123")
	if err != nil {
		t.Fatal(err)
	}
	text := []byte("Hello SwiftAuth 1.2!")
	if len(text) != 20 {
		t.Fatalf("text is %d bytes", len(text))
	}
	return []roundTripCase{
		{name: "100000 random bytes", secret: "secret-two", token: "tok.with-dots_and~tilde", nonce: filecrypt.NewNonce(), plain: random},
		{name: "20-byte text", secret: "app-secret", token: "A_b-C", nonce: filecrypt.NewNonce(), plain: text},
		{name: "empty file", secret: "app-secret", token: "tok", nonce: filecrypt.NewNonce(), plain: []byte{}},
		{name: "5001 bytes, non-ASCII secret, nonce ABCDEF0123 as sent", secret: "sécret-ключ-秘密-🔑", token: "session_token-1", nonce: upper, nonceHeader: "ABCDEF0123", plain: nonASCII},
		{name: "5001 bytes, non-ASCII secret, nonce abcdef0123", secret: "sécret-ключ-秘密-🔑", token: "session_token-1", nonce: upper, plain: nonASCII},
		{name: "secret longer than a block", secret: strings.Repeat("ключ", 20), token: "t", nonce: filecrypt.NewNonce(), plain: text},
	}
}

func encryptFor(t *testing.T, c roundTripCase, f filecrypt.Format) []byte {
	t.Helper()
	in := bytes.Clone(c.plain)
	body, err := filecrypt.Encrypt(filecrypt.NewSecretKey(c.secret), c.token, c.nonce, in, f)
	if err != nil {
		t.Fatalf("Encrypt: %v", err)
	}
	if !bytes.Equal(in, c.plain) {
		t.Fatal("Encrypt modified its input")
	}
	return body
}

func TestRoundTripWithIndependentDecryptor(t *testing.T) {
	for _, f := range []filecrypt.Format{filecrypt.Zlib, filecrypt.RawDeflate} {
		for _, c := range roundTripCases(t) {
			t.Run(f.String()+"/"+c.name, func(t *testing.T) {
				body := encryptFor(t, c, f)
				if len(body) < 28 {
					t.Fatalf("body is %d bytes, want at least 28", len(body))
				}
				header := c.nonceHeader
				if header == "" {
					header = filecrypt.NonceHex(c.nonce)
				}
				got, err := sdkDecrypt(c.secret, c.token, header, body, f == filecrypt.RawDeflate)
				if err != nil {
					t.Fatalf("decrypt: %v", err)
				}
				if !bytes.Equal(got, c.plain) {
					t.Fatalf("decrypted %d bytes, not the %d-byte original", len(got), len(c.plain))
				}
				// The other format's inflater must not accept it.
				if alt, err := sdkDecrypt(c.secret, c.token, header, body, f != filecrypt.RawDeflate); err == nil && bytes.Equal(alt, c.plain) {
					t.Fatalf("%s body also inflates as the other format", f)
				}
				// The wrong secret or token must not decrypt.
				if _, err := sdkDecrypt(c.secret+"x", c.token, header, body, f == filecrypt.RawDeflate); err == nil {
					t.Fatal("decrypted with the wrong secret")
				}
				if _, err := sdkDecrypt(c.secret, c.token+"x", header, body, f == filecrypt.RawDeflate); err == nil {
					t.Fatal("decrypted with the wrong token")
				}
			})
		}
	}
}

// Concurrent downloads share the pooled compressors; each must still decrypt.
func TestConcurrentEncrypt(t *testing.T) {
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			f := filecrypt.Zlib
			if g%2 == 1 {
				f = filecrypt.RawDeflate
			}
			secret := fmt.Sprintf("secret-%d", g)
			k := filecrypt.NewSecretKey(secret)
			for i := range 20 {
				plain := bytes.Repeat([]byte{byte(g), byte(i)}, 500*i)
				nonce := filecrypt.NewNonce()
				body, err := filecrypt.Encrypt(k, "tok", nonce, plain, f)
				if err != nil {
					t.Error(err)
					return
				}
				got, err := sdkDecrypt(secret, "tok", filecrypt.NonceHex(nonce), body, f == filecrypt.RawDeflate)
				if err != nil || !bytes.Equal(got, plain) {
					t.Errorf("goroutine %d, file %d: %v", g, i, err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestEmptyFileIsAtLeast28Bytes(t *testing.T) {
	for _, f := range []filecrypt.Format{filecrypt.Zlib, filecrypt.RawDeflate} {
		for _, in := range [][]byte{nil, {}} {
			body, err := filecrypt.Encrypt(filecrypt.NewSecretKey("s"), "t", filecrypt.NewNonce(), in, f)
			if err != nil {
				t.Fatal(err)
			}
			if len(body) < 28 || len(body) < filecrypt.Overhead {
				t.Fatalf("%s: empty file gave %d bytes", f, len(body))
			}
		}
	}
}

func TestTamperingAnyByteFails(t *testing.T) {
	for _, f := range []filecrypt.Format{filecrypt.Zlib, filecrypt.RawDeflate} {
		c := roundTripCases(t)[1] // 20-byte text
		body := encryptFor(t, c, f)
		header := filecrypt.NonceHex(c.nonce)
		raw := f == filecrypt.RawDeflate
		if _, err := sdkDecrypt(c.secret, c.token, header, body, raw); err != nil {
			t.Fatalf("untouched body: %v", err)
		}
		for p := range body {
			bad := bytes.Clone(body)
			bad[p] ^= 0x01
			if _, err := sdkDecrypt(c.secret, c.token, header, bad, raw); err == nil {
				t.Fatalf("%s: flipping a bit of byte %d still decrypts", f, p)
			}
		}
		if _, err := sdkDecrypt(c.secret, c.token, header, body[:len(body)-1], raw); err == nil {
			t.Fatalf("%s: truncated body decrypts", f)
		}
		if _, err := sdkDecrypt(c.secret, c.token, "00"+header, body, raw); err == nil {
			t.Fatalf("%s: other nonce decrypts", f)
		}
	}
}

func TestFreshIVEachTime(t *testing.T) {
	k := filecrypt.NewSecretKey("s")
	nonce := filecrypt.NewNonce()
	a, err1 := filecrypt.Encrypt(k, "t", nonce, []byte("same file"), filecrypt.Zlib)
	b, err2 := filecrypt.Encrypt(k, "t", nonce, []byte("same file"), filecrypt.Zlib)
	if err1 != nil || err2 != nil {
		t.Fatal(err1, err2)
	}
	if bytes.Equal(a, b) {
		t.Fatal("two encryptions gave the same body")
	}
}

func TestPlainIsUnchanged(t *testing.T) {
	for _, in := range [][]byte{nil, {}, []byte("plain bytes \x00\xff"), bytes.Repeat([]byte{7}, 70000)} {
		want := bytes.Clone(in)
		// No key or nonce is needed for plain downloads.
		got, err := filecrypt.Encrypt(filecrypt.SecretKey{}, "", nil, in, filecrypt.Plain)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) || len(got) != len(want) {
			t.Fatalf("Plain changed the bytes: %q", got)
		}
	}
	if filecrypt.Plain.Encrypted() || !filecrypt.Zlib.Encrypted() || !filecrypt.RawDeflate.Encrypted() {
		t.Fatal("Encrypted() is wrong")
	}
}

func TestEncryptErrors(t *testing.T) {
	k := filecrypt.NewSecretKey("s")
	if _, err := filecrypt.Encrypt(filecrypt.SecretKey{}, "t", filecrypt.NewNonce(), []byte("x"), filecrypt.Zlib); !errors.Is(err, filecrypt.ErrNoSecretKey) {
		t.Errorf("zero key: %v", err)
	}
	if _, err := filecrypt.Encrypt(k, "t", nil, []byte("x"), filecrypt.RawDeflate); !errors.Is(err, filecrypt.ErrNoNonce) {
		t.Errorf("no nonce: %v", err)
	}
	for _, f := range []filecrypt.Format{0, 4, -1} {
		if _, err := filecrypt.Encrypt(k, "t", filecrypt.NewNonce(), []byte("x"), f); err == nil {
			t.Errorf("format %d accepted", f)
		}
	}
}

func TestNonce(t *testing.T) {
	a, b := filecrypt.NewNonce(), filecrypt.NewNonce()
	if len(a) != 16 || len(b) != 16 || bytes.Equal(a, b) {
		t.Fatalf("nonces %x %x", a, b)
	}
	if got := filecrypt.NonceHex([]byte{0xAB, 0xCD, 0xEF, 0x01, 0x23}); got != "abcdef0123" {
		t.Fatalf("NonceHex = %q", got)
	}
	h := filecrypt.NonceHex(a)
	if len(h) != 32 || h != strings.ToLower(h) {
		t.Fatalf("NonceHex(NewNonce()) = %q", h)
	}
}

func TestFormatFor(t *testing.T) {
	for _, c := range []struct {
		ua      string
		enabled bool
		want    filecrypt.Format
	}{
		// Encryption off for the app: always plain.
		{"", false, filecrypt.Plain},
		{"Go-http-client/1.1", false, filecrypt.Plain},
		{"MyApp/1.0 CFNetwork/1494.0.7 Darwin/23.4.0", false, filecrypt.Plain},
		{"LuaSocket 3.0-rc1", false, filecrypt.Plain},
		// Lua cannot decrypt.
		{"LuaSocket 3.0-rc1", true, filecrypt.Plain},
		{"LuaSocket 3.0.0", true, filecrypt.Plain},
		{"luasocket 2.0.2", true, filecrypt.Plain},
		// Swift (URLSession): raw DEFLATE.
		{"MyApp/1.0 CFNetwork/1494.0.7 Darwin/23.4.0", true, filecrypt.RawDeflate},
		{"swift-client (unknown version) CFNetwork/1410.0.3 Darwin/22.6.0", true, filecrypt.RawDeflate},
		{"CFNetwork/1240.0.4", true, filecrypt.RawDeflate},
		{"Foo Darwin/21.6.0", true, filecrypt.RawDeflate},
		// Everyone else, and no User-Agent at all: zlib.
		{"", true, filecrypt.Zlib},
		{"Go-http-client/1.1", true, filecrypt.Zlib},
		{"python-requests/2.31.0", true, filecrypt.Zlib},
		{"Java-http-client/21.0.2", true, filecrypt.Zlib},
		{"Ruby", true, filecrypt.Zlib},
		{"SwiftAuth-CPP/1.0", true, filecrypt.Zlib},
		{"okhttp/4.12.0", true, filecrypt.Zlib},
		{"curl/8.5.0", true, filecrypt.Zlib},
	} {
		if got := filecrypt.FormatFor(c.ua, c.enabled); got != c.want {
			t.Errorf("FormatFor(%q, %v) = %s, want %s", c.ua, c.enabled, got, c.want)
		}
	}
}

func BenchmarkEncrypt1MiB(b *testing.B) {
	rng := rand.New(rand.NewChaCha8([32]byte{1}))
	random := make([]byte, 1<<20)
	for i := range random {
		random[i] = byte(rng.Uint32())
	}
	line := []byte("2026-03-18T12:00:00Z INFO keyward: user logged in from 203.0.113.7\n")
	text := bytes.Repeat(line, (1<<20)/len(line)+1)[:1<<20]
	k := filecrypt.NewSecretKey("bench-secret")
	nonce := filecrypt.NewNonce()
	for _, d := range []struct {
		name string
		data []byte
	}{{"random", random}, {"text", text}} {
		b.Run(d.name, func(b *testing.B) {
			b.SetBytes(int64(len(d.data)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := filecrypt.Encrypt(k, "token", nonce, d.data, filecrypt.Zlib); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
