package filecrypt

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
)

// Format is how a download is sent: in clear, or encrypted with one of the two
// compressions the SDKs inflate. The zero value is not a format, so that a forgotten
// choice fails instead of silently sending the file in clear.
type Format int

const (
	// Plain sends the file as is, without the encryption headers (encryption off for
	// the app, or a client that cannot decrypt: Lua).
	Plain Format = iota + 1
	// Zlib encrypts over a zlib stream (RFC 1950): Go, Python, Node, C#, C++, Java,
	// Kotlin, Rust, Ruby and PHP.
	Zlib
	// RawDeflate encrypts over raw DEFLATE (RFC 1951): Swift, whose Apple Compression
	// ".zlib" has no zlib header or checksum.
	RawDeflate
)

// String returns the format's name.
func (f Format) String() string {
	switch f {
	case Plain:
		return "plain"
	case Zlib:
		return "zlib"
	case RawDeflate:
		return "raw-deflate"
	}
	return fmt.Sprintf("filecrypt.Format(%d)", int(f))
}

// Encrypted reports whether f is an encrypted format, i.e. whether the reply carries
// "X-File-Encrypted: 1" and "X-File-Nonce".
func (f Format) Encrypted() bool { return f == Zlib || f == RawDeflate }

// FormatFor picks the format for a download from the client's User-Agent (the only
// thing that tells SDKs apart, CLIENT-SDKS.md §1 and §5.4; an inference, not an SDK
// fact): Plain when encryption is off for the app or the client is LuaSocket (Lua
// refuses encrypted files), RawDeflate for Apple's URL loading (CFNetwork/Darwin:
// Swift), and Zlib otherwise, an empty User-Agent included. Matching is
// case-insensitive.
func FormatFor(userAgent string, encryptionEnabled bool) Format {
	if !encryptionEnabled {
		return Plain
	}
	ua := strings.ToLower(userAgent)
	switch {
	case strings.Contains(ua, "luasocket"):
		return Plain
	case strings.Contains(ua, "cfnetwork"), strings.Contains(ua, "darwin"):
		return RawDeflate
	}
	return Zlib
}

// NonceSize is the length of the nonces [NewNonce] makes.
const NonceSize = 16

// NewNonce returns NonceSize fresh random bytes, to be used for one download.
func NewNonce() []byte {
	n := make([]byte, NonceSize)
	_, _ = rand.Read(n) // never fails on supported platforms (Go 1.24+ crashes instead)
	return n
}

// NonceHex is the X-File-Nonce header value of n: lowercase hex, even length (PHP's
// hex2bin needs both to be safe; the key schedule uses lowercase whatever is sent).
func NonceHex(n []byte) string { return hex.EncodeToString(n) }

// ErrNoNonce is returned by [Encrypt] for an empty nonce (every SDK requires a
// non-empty X-File-Nonce).
var ErrNoNonce = errors.New("filecrypt: empty nonce")

// Layer-2 sizes (AES-256-GCM as the SDKs open it).
const (
	ivSize  = 12
	tagSize = 16
	// Overhead is what encryption adds after compression: IV and tag. An encrypted
	// body is never shorter than this (C# and C++ reject anything shorter).
	Overhead = ivSize + tagSize
)

// Encrypt returns the body of a download of plain for the session whose client holds
// the secret behind key, under the given nonce (send [NonceHex](nonce) as
// X-File-Nonce). With [Plain] it returns plain itself, unchanged, and ignores key and
// nonce. The whole result is built in memory (the shuffle spans it): callers cap the
// size of what they encrypt.
func Encrypt(key SecretKey, sessionToken string, nonce []byte, plain []byte, f Format) ([]byte, error) {
	switch {
	case f == Plain:
		return plain, nil
	case !f.Encrypted():
		return nil, fmt.Errorf("filecrypt: unknown format %d", int(f))
	case len(nonce) == 0:
		return nil, ErrNoNonce
	}
	keys, err := deriveKeys(key, sessionToken, nonce)
	if err != nil {
		return nil, err
	}
	defer keys.wipe()

	// Layer 1, compression, written after room for the IV so that layer 2 can seal in
	// place. Random data grows a little under DEFLATE; the margin avoids regrowing.
	var buf bytes.Buffer
	buf.Grow(ivSize + len(plain) + len(plain)/1000 + 64 + tagSize)
	iv := make([]byte, ivSize)
	_, _ = rand.Read(iv)
	buf.Write(iv)
	if err := compress(&buf, plain, f); err != nil {
		return nil, err
	}

	// Layer 2: IV ‖ AES-256-GCM(K_aes, IV, compressed, no AAD) ‖ tag.
	block, err := aes.NewCipher(keys.aes[:])
	if err != nil {
		return nil, err
	}
	gcm, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	b := buf.Bytes()
	out := gcm.Seal(b[:ivSize], iv, b[ivSize:], nil)

	// Layers 3 and 4.
	shuffle(out, keys.shuf)
	xor(out, keys.xor)
	return out, nil
}

// compressLevel is the DEFLATE level of layer 1 (every level inflates the same way).
// Measured here: BestSpeed gives about 10% larger output than the default level on
// executables and text, the same on incompressible data, for 2–2.5× less CPU.
const compressLevel = flate.BestSpeed

// resettableWriter is what *zlib.Writer and *flate.Writer have in common.
type resettableWriter interface {
	io.WriteCloser
	Reset(io.Writer)
}

// The compressors are pooled: each holds hundreds of KB of tables, too much to
// allocate per download.
var (
	zlibWriters = sync.Pool{New: func() any {
		w, err := zlib.NewWriterLevel(nil, compressLevel)
		if err != nil {
			panic(err) // constant, valid level
		}
		return w
	}}
	flateWriters = sync.Pool{New: func() any {
		w, err := flate.NewWriter(nil, compressLevel)
		if err != nil {
			panic(err)
		}
		return w
	}}
)

// compress appends plain to w as a zlib stream (Zlib) or raw DEFLATE (RawDeflate).
func compress(w *bytes.Buffer, plain []byte, f Format) error {
	pool := &flateWriters
	if f == Zlib {
		pool = &zlibWriters
	}
	zw := pool.Get().(resettableWriter)
	zw.Reset(w)
	_, err := zw.Write(plain)
	if cerr := zw.Close(); err == nil {
		err = cerr
	}
	zw.Reset(nil) // drop the reference to w before pooling
	pool.Put(zw)
	return err
}

// fileKeys is the key schedule of one download (CLIENT-SDKS.md §5.2).
type fileKeys struct {
	master, aes, shuf, xor [sha256.Size]byte
}

func (k *fileKeys) wipe() { *k = fileKeys{} }

// deriveKeys computes master = HMAC-SHA256(S, token + "|" + lowercase-hex(nonce)) and
// K_aes, K_shuf, K_xor = SHA-256(master ‖ 0x01 / 0x02 / 0x03).
func deriveKeys(key SecretKey, token string, nonce []byte) (fileKeys, error) {
	var k fileKeys
	msg := make([]byte, 0, len(token)+1+2*len(nonce))
	msg = append(msg, token...)
	msg = append(msg, '|')
	msg = hex.AppendEncode(msg, nonce)
	master, err := key.hmac(msg)
	if err != nil {
		return k, err
	}
	k.master = master
	var in [sha256.Size + 1]byte
	copy(in[:], master[:])
	for i, dst := range []*[sha256.Size]byte{&k.aes, &k.shuf, &k.xor} {
		in[sha256.Size] = byte(i + 1)
		*dst = sha256.Sum256(in[:])
	}
	clear(in[:])
	return k, nil
}

// LCG constants of the shuffle RNG (Knuth's MMIX multiplier and increment).
const (
	lcgA     = 6364136223846793005 // 0x5851F42D4C957F2D
	lcgC     = 1442695040888963407 // 0x14057B7EF767814F
	zeroSeed = 0xDEADBEEFCAFE1234
)

// rng is the SDKs' 64-bit LCG; all arithmetic wraps mod 2^64.
type rng struct{ state uint64 }

// newRNG seeds the LCG from K_shuf: bytes 0–7 little-endian, then for i = 8..31
// state ^= K_shuf[i] << 8·(i mod 8) followed by one LCG step; a zero state becomes
// 0xDEADBEEFCAFE1234.
func newRNG(kShuf [sha256.Size]byte) *rng {
	s := binary.LittleEndian.Uint64(kShuf[:8])
	for i := 8; i < len(kShuf); i++ {
		s ^= uint64(kShuf[i]) << (8 * (i % 8))
		s = s*lcgA + lcgC
	}
	if s == 0 {
		s = zeroSeed
	}
	return &rng{state: s}
}

// next steps the LCG and returns the new state.
func (r *rng) next() uint64 {
	r.state = r.state*lcgA + lcgC
	return r.state
}

// shuffle is layer 3: Fisher–Yates over b, for i = n−1 down to 1 swapping b[i] and
// b[next() mod (i+1)], unsigned 64-bit.
func shuffle(b []byte, kShuf [sha256.Size]byte) {
	r := newRNG(kShuf)
	for i := len(b) - 1; i >= 1; i-- {
		j := r.next() % uint64(i+1)
		b[i], b[j] = b[j], b[i]
	}
}

// xor is layer 4: b[p] ^= K_xor[p mod 32].
func xor(b []byte, kXor [sha256.Size]byte) {
	for p := range b {
		b[p] ^= kXor[p%len(kXor)]
	}
}
