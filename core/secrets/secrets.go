// Package secrets makes and hashes the random values Keyward hands out: API keys, mailed
// tokens, app secrets. Only hashes are stored; lookups go by hash, so no stored value can
// be replayed if the database leaks.
//
// The few secrets the server must read back (TOTP secrets, integration signing secrets,
// the apps' Ed25519 signing keys) cannot be hashed: Box encrypts them at rest with the operator's secrets key (AEAD, the
// record and field as associated data). The storage engines seal and open them through
// storage.Sealer, so services never see the sealed form.
package secrets

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
)

// Random returns n random bytes encoded URL-safe base64 without padding (only
// [A-Za-z0-9_-], safe in URLs and query strings unencoded).
func Random(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // never fails on supported platforms (Go 1.24+ crashes instead)
	return base64.RawURLEncoding.EncodeToString(b)
}

// Hash returns the hex SHA-256 of s. The values hashed are high-entropy random tokens, so a
// fast hash is enough (no dictionary to attack).
func Hash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
