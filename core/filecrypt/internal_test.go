package filecrypt

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
)

// Known-answer values of CLIENT-SDKS.md §5.3.
const (
	katSecret = "secret-two"
	katToken  = "tok.with-dots_and~tilde"
	katNonce  = "00ff10"
	katMaster = "61e6c76e4ac4a166af939647539b7db80e59731cafe98091c1f9a41be4f46aa0"
	katAES    = "a6b4145eafa447fd7faa99c1c593164109a7acfa1c9b55d77d5eeb365224e092"
	katShuf   = "eed14068c08e5903f7f508c7768601aa0af285c2b6fb939a1dab96b776bd26c9"
	katXor    = "248ed8078448e0fe2bfc13245396cc61e25792d84f56528b065d0f0b666f05c2"
	katLayer3 = "14110c0a0e0308251a0b1709241b021e00071c22061d1f2310212026042716151813010d120f1905"
	katLayer4 = "309fd40d8a4be8db31f7042d778dce7fe2508efa494b4da8167c2f2d624813d73c9dd90a9647f9fb"
)

var katNext = [3]uint64{761956692550812525, 15993357515145424504, 8372064760334791783}

func mustHex(t testing.TB, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func katKeys(t *testing.T) fileKeys {
	t.Helper()
	k, err := deriveKeys(NewSecretKey(katSecret), katToken, mustHex(t, katNonce))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestKnownAnswerKeySchedule(t *testing.T) {
	k := katKeys(t)
	for _, c := range []struct {
		name string
		got  [32]byte
		want string
	}{
		{"master", k.master, katMaster},
		{"K_aes", k.aes, katAES},
		{"K_shuf", k.shuf, katShuf},
		{"K_xor", k.xor, katXor},
	} {
		if got := hex.EncodeToString(c.got[:]); got != c.want {
			t.Errorf("%s = %s, want %s", c.name, got, c.want)
		}
	}
}

func TestKnownAnswerRNG(t *testing.T) {
	r := newRNG(katKeys(t).shuf)
	for i, want := range katNext {
		if got := r.next(); got != want {
			t.Errorf("next() #%d = %d, want %d", i+1, got, want)
		}
	}
}

func TestKnownAnswerShuffleAndXor(t *testing.T) {
	k := katKeys(t)
	b := make([]byte, 40)
	for i := range b {
		b[i] = byte(i)
	}
	shuffle(b, k.shuf)
	if got := hex.EncodeToString(b); got != katLayer3 {
		t.Fatalf("layer 3 = %s, want %s", got, katLayer3)
	}
	xor(b, k.xor)
	if got := hex.EncodeToString(b); got != katLayer4 {
		t.Fatalf("layer 4 = %s, want %s", got, katLayer4)
	}
}

// A K_shuf whose seeding ends on state 0 must switch to 0xDEADBEEFCAFE1234.
func TestRNGZeroGuard(t *testing.T) {
	// Inverse of A mod 2^64 (Newton: each step doubles the correct low bits).
	inv := uint64(lcgA)
	for range 6 {
		inv *= 2 - lcgA*inv
	}
	if inv*lcgA != 1 {
		t.Fatal("bad inverse")
	}
	// With K_shuf[8:] all zero, each seeding step is s = s*A + C; run it backwards
	// from 0 to find bytes 0–7.
	var s uint64
	for range 24 {
		s = (s - lcgC) * inv
	}
	var kShuf [32]byte
	for i := range 8 {
		kShuf[i] = byte(s >> (8 * i))
	}
	r := newRNG(kShuf)
	if r.state != zeroSeed {
		t.Fatalf("state after seeding = %#x, want %#x", r.state, uint64(zeroSeed))
	}
	want, a, c := uint64(zeroSeed), uint64(lcgA), uint64(lcgC)
	want = want*a + c
	if got := r.next(); got != want {
		t.Fatalf("next() = %d, want %d", got, want)
	}
}

func TestShuffleIsPermutation(t *testing.T) {
	k := katKeys(t)
	for _, n := range []int{0, 1, 2, 3, 28, 257, 10000} {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(i % 251)
		}
		orig := bytes.Clone(b)
		shuffle(b, k.shuf)
		var ca, cb [256]int
		for i := range b {
			ca[orig[i]]++
			cb[b[i]]++
		}
		if ca != cb {
			t.Errorf("n=%d: shuffle is not a permutation", n)
		}
	}
}

// secrets covering keys shorter than, equal to and longer than the 64-byte block, in
// bytes (UTF-8) rather than characters.
func hmacSecrets() []string {
	return []string{
		"",
		"k",
		katSecret,
		strings.Repeat("a", 63),
		strings.Repeat("b", 64),
		strings.Repeat("c", 65),
		strings.Repeat("d", 200),
		"sécret-ключ-秘密-🔑",
		strings.Repeat("ж", 32),       // 32 characters, 64 bytes
		strings.Repeat("ж", 40),       // 40 characters, 80 bytes: hashed first
		strings.Repeat("é", 31) + "x", // 63 bytes
		"\x00\xff binary \x00",
	}
}

func TestHMACMidstatesMatchCryptoHMAC(t *testing.T) {
	msgs := [][]byte{nil, []byte("x"), []byte(katToken + "|" + katNonce), bytes.Repeat([]byte{0xa5}, 1000)}
	for _, secret := range hmacSecrets() {
		k := NewSecretKey(secret)
		// Also through the stored text form, as a session would use it.
		text, err := k.MarshalText()
		if err != nil {
			t.Fatal(err)
		}
		k2, err := ParseSecretKey(string(text))
		if err != nil {
			t.Fatalf("secret %q: parse: %v", secret, err)
		}
		for _, msg := range msgs {
			m := hmac.New(sha256.New, []byte(secret))
			m.Write(msg)
			want := m.Sum(nil)
			for i, key := range []SecretKey{k, k2} {
				got, err := key.hmac(msg)
				if err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(got[:], want) {
					t.Errorf("secret %q (%d bytes), msg len %d, key #%d: hmac = %x, want %x",
						secret, len(secret), len(msg), i, got, want)
				}
			}
		}
	}
}

func TestSecretKeyDoesNotHoldTheSecret(t *testing.T) {
	secret := "a-fairly-long-application-secret-value"
	b, err := NewSecretKey(secret).MarshalBinary()
	if err != nil {
		t.Fatal(err)
	}
	for _, pad := range []byte{0, 0x36, 0x5c} {
		x := []byte(secret)
		for i := range x {
			x[i] ^= pad
		}
		if bytes.Contains(b, x[:8]) {
			t.Errorf("stored key contains the secret (xor %#x)", pad)
		}
	}
	text, _ := NewSecretKey(secret).MarshalText()
	if strings.Contains(string(text), secret) {
		t.Error("text form contains the secret")
	}
}

func TestSecretKeyJSONAndZero(t *testing.T) {
	type session struct {
		Key SecretKey `json:"fk"`
	}
	in := session{Key: NewSecretKey(katSecret)}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var out session
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	a, _ := in.Key.hmac([]byte("m"))
	b, err := out.Key.hmac([]byte("m"))
	if err != nil || a != b {
		t.Fatalf("JSON round trip changed the key (err %v)", err)
	}

	zero, err := json.Marshal(session{})
	if err != nil || string(zero) != `{"fk":""}` {
		t.Fatalf("zero key JSON = %s, %v", zero, err)
	}
	out = session{Key: NewSecretKey("x")}
	if err := json.Unmarshal(zero, &out); err != nil || !out.Key.IsZero() {
		t.Fatalf("zero key did not round trip: %v", err)
	}
	if _, err := out.Key.hmac(nil); err != ErrNoSecretKey {
		t.Fatalf("zero key hmac error = %v", err)
	}
}

func TestSecretKeyRejectsMalformed(t *testing.T) {
	good, _ := NewSecretKey(katSecret).MarshalBinary()
	wrongVersion := bytes.Clone(good)
	wrongVersion[0] = 2
	badMagic := bytes.Clone(good)
	badMagic[1] ^= 0xff
	for name, text := range map[string]string{
		"not base64":    "!!!not base64!!!",
		"version 2":     b64(wrongVersion),
		"odd length":    b64(good[:len(good)-1]),
		"version only":  b64(good[:1]),
		"short states":  b64(append([]byte{1}, make([]byte, 20)...)),
		"bad magic":     b64(badMagic),
		"garbage state": b64(append([]byte{1}, bytes.Repeat([]byte{7}, len(good)-1)...)),
	} {
		if _, err := ParseSecretKey(text); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }

func TestSecretKeyRedacted(t *testing.T) {
	k := NewSecretKey(katSecret)
	text, _ := k.MarshalText()
	var buf bytes.Buffer
	slog.New(slog.NewJSONHandler(&buf, nil)).Info("x", "key", k)
	out := fmt.Sprintf("%v %+v %#v %s", k, k, k, k) + buf.String()
	if strings.Contains(out, string(text[:16])) || !strings.Contains(out, "redacted") {
		t.Fatalf("key leaked or not redacted: %s", out)
	}
}
