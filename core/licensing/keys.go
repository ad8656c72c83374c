package licensing

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
)

// NewKey makes a signing key: the base64 of a fresh 32-byte Ed25519 seed, the form
// storage.App.SigningKey holds (sealed at rest by the engines).
func NewKey() string {
	seed := make([]byte, ed25519.SeedSize)
	_, _ = rand.Read(seed) // never fails on supported platforms
	return base64.StdEncoding.EncodeToString(seed)
}

// ParseKey answers the private key of a stored signing key.
func ParseKey(stored string) (ed25519.PrivateKey, error) {
	seed, err := base64.StdEncoding.DecodeString(stored)
	if err != nil || len(seed) != ed25519.SeedSize {
		return nil, fmt.Errorf("licensing: the stored signing key is not a base64 Ed25519 seed")
	}
	return ed25519.NewKeyFromSeed(seed), nil
}

// PublicKey is the public half as the dashboard shows it: the base64 of the 32 raw bytes,
// and the PEM "PUBLIC KEY" block (PKIX) most crypto libraries read.
type PublicKey struct {
	Base64 string
	PEM    string
}

// PublicOf answers the public forms of a stored signing key ("" gives the zero value).
func PublicOf(stored string) (PublicKey, error) {
	if stored == "" {
		return PublicKey{}, nil
	}
	priv, err := ParseKey(stored)
	if err != nil {
		return PublicKey{}, err
	}
	pub := priv.Public().(ed25519.PublicKey)
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return PublicKey{}, fmt.Errorf("licensing: encode public key: %w", err)
	}
	return PublicKey{Base64: base64.StdEncoding.EncodeToString(pub),
		PEM: string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))}, nil
}

// DefaultLicenseFileDays is the check-in deadline of a license file when the app sets
// none: the program must go online again within 30 days of the file's issue.
const DefaultLicenseFileDays = 30
