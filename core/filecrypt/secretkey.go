package filecrypt

import (
	"crypto/sha256"
	"encoding"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"log/slog"
)

// secretKeyVersion is the first byte of the binary form, so that a later layout can be
// told apart from this one (an unknown version is refused, never misread).
const secretKeyVersion = 1

// ErrNoSecretKey is returned by [Encrypt] when the key is the zero [SecretKey] (for
// example a session created before the key was recorded).
var ErrNoSecretKey = errors.New("filecrypt: no secret key")

// SecretKey lets the server compute HMAC-SHA256 keyed by the application secret
// without holding the secret: it is the pair of SHA-256 midstates of HMAC after the
// key block has been absorbed (see the package documentation for what this does and
// does not allow). Its text form (base64, via [encoding.TextMarshaler]) goes into the
// session record; the zero value means "no key" and encodes as "".
//
// A SecretKey is immutable and safe for concurrent use.
type SecretKey struct {
	inner, outer []byte // sha256 digest states (MarshalBinary) after key⊕ipad / key⊕opad
}

// NewSecretKey returns the key for the application secret, taken as its UTF-8 bytes
// exactly as the SDKs use it. Call it only after the secret has passed the init check.
func NewSecretKey(secret string) SecretKey {
	var block [sha256.BlockSize]byte
	if len(secret) > sha256.BlockSize {
		sum := sha256.Sum256([]byte(secret))
		copy(block[:], sum[:])
		clear(sum[:])
	} else {
		copy(block[:], secret)
	}
	var k SecretKey
	for i, pad := range [2]byte{0x36, 0x5c} { // ipad, opad (RFC 2104)
		var padded [sha256.BlockSize]byte
		for j, b := range block {
			padded[j] = b ^ pad
		}
		h := sha256.New()
		h.Write(padded[:])
		clear(padded[:])
		state, err := h.(encoding.BinaryMarshaler).MarshalBinary()
		if err != nil {
			// The standard library digest always marshals; failing here would mean a
			// toolchain without that support, which the tests would catch at once.
			panic("filecrypt: sha256 state cannot be marshaled: " + err.Error())
		}
		if i == 0 {
			k.inner = state
		} else {
			k.outer = state
		}
	}
	clear(block[:])
	return k
}

// IsZero reports whether k is the zero key (no secret recorded).
func (k SecretKey) IsZero() bool { return k.inner == nil }

// MarshalBinary returns version ‖ inner state ‖ outer state (empty for the zero key).
func (k SecretKey) MarshalBinary() ([]byte, error) {
	if k.IsZero() {
		return []byte{}, nil
	}
	b := make([]byte, 0, 1+len(k.inner)+len(k.outer))
	b = append(b, secretKeyVersion)
	b = append(b, k.inner...)
	return append(b, k.outer...), nil
}

// UnmarshalBinary is the inverse of [SecretKey.MarshalBinary]. Both states are
// checked by loading them into a SHA-256 digest; empty input gives the zero key.
func (k *SecretKey) UnmarshalBinary(b []byte) error {
	if len(b) == 0 {
		*k = SecretKey{}
		return nil
	}
	if b[0] != secretKeyVersion {
		return fmt.Errorf("filecrypt: secret key version %d not supported", b[0])
	}
	b = b[1:]
	if len(b) == 0 || len(b)%2 != 0 {
		return errors.New("filecrypt: malformed secret key")
	}
	half := len(b) / 2
	inner := append([]byte(nil), b[:half]...)
	outer := append([]byte(nil), b[half:]...)
	for _, st := range [2][]byte{inner, outer} {
		if _, err := loadState(st); err != nil {
			return fmt.Errorf("filecrypt: malformed secret key: %w", err)
		}
	}
	*k = SecretKey{inner: inner, outer: outer}
	return nil
}

// MarshalText returns the standard base64 of [SecretKey.MarshalBinary] ("" for the
// zero key). It never fails.
func (k SecretKey) MarshalText() ([]byte, error) {
	b, _ := k.MarshalBinary()
	out := make([]byte, base64.StdEncoding.EncodedLen(len(b)))
	base64.StdEncoding.Encode(out, b)
	return out, nil
}

// UnmarshalText is the inverse of [SecretKey.MarshalText].
func (k *SecretKey) UnmarshalText(text []byte) error {
	b := make([]byte, base64.StdEncoding.DecodedLen(len(text)))
	n, err := base64.StdEncoding.Decode(b, text)
	if err != nil {
		return errors.New("filecrypt: malformed secret key text")
	}
	return k.UnmarshalBinary(b[:n])
}

// ParseSecretKey decodes the text form of a key (see [SecretKey.MarshalText]); ""
// gives the zero key.
func ParseSecretKey(s string) (SecretKey, error) {
	var k SecretKey
	err := k.UnmarshalText([]byte(s))
	return k, err
}

// String is redacted so that a key never reaches a log by accident; use
// [SecretKey.MarshalText] for the stored form.
func (k SecretKey) String() string {
	if k.IsZero() {
		return "filecrypt.SecretKey(none)"
	}
	return "filecrypt.SecretKey(redacted)"
}

// GoString is redacted like [SecretKey.String] (for %#v).
func (k SecretKey) GoString() string { return k.String() }

// LogValue is redacted like [SecretKey.String] (slog would otherwise use MarshalText).
func (k SecretKey) LogValue() slog.Value { return slog.StringValue(k.String()) }

// loadState returns a SHA-256 digest resumed from a marshaled state.
func loadState(state []byte) (hash.Hash, error) {
	h := sha256.New()
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(state); err != nil {
		return nil, err
	}
	return h, nil
}

// hmac returns HMAC-SHA256(secret, msg), resumed from the midstates.
func (k SecretKey) hmac(msg []byte) ([sha256.Size]byte, error) {
	var out [sha256.Size]byte
	if k.IsZero() {
		return out, ErrNoSecretKey
	}
	in, err := loadState(k.inner)
	if err != nil {
		return out, err
	}
	in.Write(msg)
	var innerSum [sha256.Size]byte
	in.Sum(innerSum[:0])
	o, err := loadState(k.outer)
	if err != nil {
		return out, err
	}
	o.Write(innerSum[:])
	o.Sum(out[:0])
	return out, nil
}
