package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
)

// SealedPrefix starts every value Box.Seal makes: "ks1:" then base64url (no padding) of
// nonce ‖ ciphertext ‖ tag. The version in it lets a later format (another cipher, a key
// id for rotation) be told apart; a value without it was stored before encryption at rest
// existed and is read as it is. None of the secrets sealed so far can start with it in
// clear (TOTP secrets are base32, integration secrets start with "whsec_").
const SealedPrefix = "ks1:"

// MinKeyLen is the shortest key material NewBox accepts.
const MinKeyLen = 32

// ErrCannotOpen answers Box.Open for a sealed value that does not decrypt: it was sealed
// with another key (the key setting differs from the one in use when it was written), or
// for another record, or it was altered.
var ErrCannotOpen = errors.New("secrets: sealed value does not open with this key (wrong secrets key, or altered data)")

// Box encrypts at rest the secrets the server must read back (TOTP secrets, integration
// signing secrets; anything else later, such as private keys, the same way): AES-256-GCM
// with a fresh random 96-bit nonce per value, and the name of the record and field the
// value belongs to as associated data, so a sealed value copied into another record or
// field does not open there. Box is safe for concurrent use.
type Box struct {
	aead cipher.AEAD
}

// NewBox derives the AES-256 key from the operator's key material (at least MinKeyLen
// bytes, any text: HKDF-SHA256 spreads it into a uniform key).
func NewBox(keyMaterial []byte) (*Box, error) {
	if len(keyMaterial) < MinKeyLen {
		return nil, fmt.Errorf("secrets: the secrets key must be at least %d bytes", MinKeyLen)
	}
	key, err := hkdf.Key(sha256.New, keyMaterial, nil, "keyward secrets at rest v1", 32)
	if err != nil {
		return nil, fmt.Errorf("secrets: derive key: %w", err)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("secrets: %w", err)
	}
	return &Box{aead: aead}, nil
}

// Seal encrypts plain for the record field named by context (for example
// "account/<id>/twoFactorSecret"). The empty string stays empty: it means "no secret" and
// hides nothing.
func (b *Box) Seal(plain, context string) (string, error) {
	if plain == "" {
		return "", nil
	}
	ns := b.aead.NonceSize()
	buf := make([]byte, ns, ns+len(plain)+b.aead.Overhead())
	_, _ = rand.Read(buf) // never fails on supported platforms (Go 1.24+ crashes instead)
	buf = b.aead.Seal(buf, buf[:ns], []byte(plain), []byte(context))
	return SealedPrefix + base64.RawURLEncoding.EncodeToString(buf), nil
}

// Open answers the plaintext of a value Seal made for the same context, or ErrCannotOpen.
// A value that is not sealed (stored in clear before encryption at rest) is answered as it
// is, so existing data keeps working until it is sealed.
func (b *Box) Open(stored, context string) (string, error) {
	rest, ok := strings.CutPrefix(stored, SealedPrefix)
	if !ok {
		return stored, nil
	}
	raw, err := base64.RawURLEncoding.DecodeString(rest)
	ns := b.aead.NonceSize()
	if err != nil || len(raw) < ns+b.aead.Overhead() {
		return "", fmt.Errorf("%w: %s is malformed", ErrCannotOpen, context)
	}
	plain, err := b.aead.Open(nil, raw[:ns], raw[ns:], []byte(context))
	if err != nil {
		return "", fmt.Errorf("%w: %s", ErrCannotOpen, context)
	}
	return string(plain), nil
}

// Sealed reports whether stored is a value Seal made (as opposed to one kept in clear).
func (b *Box) Sealed(stored string) bool { return strings.HasPrefix(stored, SealedPrefix) }
