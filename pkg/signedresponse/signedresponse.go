// Package signedresponse verifies the Ed25519 signatures a Keyward server puts on the
// Client API responses of an application that enabled signResponses. It imports nothing
// of the server: a client program (or its tests) imports it alone.
//
// The scheme: the server signs the bytes of X-Signature-Timestamp (unix seconds, decimal)
// followed by the exact bytes of the response body, and sends the signature in hex in
// X-Signature-Ed25519. A file download is signed over the timestamp followed by the value
// of X-File-Hash (the SHA-256 of the file in hex), so a program checks the header's
// signature and then the downloaded bytes against the hash.
//
// A verifier must also refuse a timestamp too far from its clock (Window), or a recorded
// answer could be replayed later.
package signedresponse

import (
	"crypto/ed25519"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names of the signature.
const (
	HeaderSignature = "X-Signature-Ed25519"
	HeaderTimestamp = "X-Signature-Timestamp"
	HeaderFileHash  = "X-File-Hash"
)

// DefaultWindow is the freshness a verifier should allow by default: the answer's
// timestamp at most this far from the verifier's clock, either way (clock skew).
const DefaultWindow = 5 * time.Minute

// Errors answered by the checks; wrap-tested with errors.Is.
var (
	ErrUnsigned     = errors.New("signedresponse: the response carries no signature")
	ErrBadSignature = errors.New("signedresponse: the signature does not match (forged or altered response, or another key)")
	ErrStale        = errors.New("signedresponse: the signature timestamp is outside the freshness window")
	ErrBadKey       = errors.New("signedresponse: not an Ed25519 public key")
)

// Message answers the bytes that are signed: the timestamp then the payload (the body,
// or the X-File-Hash value of a download).
func Message(timestamp string, payload []byte) []byte {
	m := make([]byte, 0, len(timestamp)+len(payload))
	m = append(m, timestamp...)
	return append(m, payload...)
}

// Sign answers the hex signature of timestamp‖payload (the server side of the scheme).
func Sign(key ed25519.PrivateKey, timestamp string, payload []byte) string {
	return hex.EncodeToString(ed25519.Sign(key, Message(timestamp, payload)))
}

// ParsePublicKey reads the app's public key in either form the dashboard shows: the
// base64 of the 32 raw bytes, or the PEM "PUBLIC KEY" block (PKIX).
func ParsePublicKey(s string) (ed25519.PublicKey, error) {
	s = strings.TrimSpace(s)
	if block, _ := pem.Decode([]byte(s)); block != nil {
		k, err := x509.ParsePKIXPublicKey(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrBadKey, err)
		}
		pub, ok := k.(ed25519.PublicKey)
		if !ok {
			return nil, fmt.Errorf("%w: the PEM holds a %T", ErrBadKey, k)
		}
		return pub, nil
	}
	raw, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		raw, err = base64.RawStdEncoding.DecodeString(s)
	}
	if err != nil || len(raw) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("%w: want the base64 of %d bytes or a PEM block", ErrBadKey, ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(raw), nil
}

// Verify checks a signature over timestamp‖payload, and that the timestamp is within
// window of now (window 0 skips the freshness check; a negative one is DefaultWindow).
func Verify(pub ed25519.PublicKey, timestamp string, payload []byte, signatureHex string, now time.Time, window time.Duration) error {
	if signatureHex == "" || timestamp == "" {
		return ErrUnsigned
	}
	sig, err := hex.DecodeString(signatureHex)
	if err != nil || len(sig) != ed25519.SignatureSize || len(pub) != ed25519.PublicKeySize {
		return ErrBadSignature
	}
	if !ed25519.Verify(pub, Message(timestamp, payload), sig) {
		return ErrBadSignature
	}
	if window < 0 {
		window = DefaultWindow
	}
	if window > 0 {
		secs, err := strconv.ParseInt(timestamp, 10, 64)
		if err != nil {
			return fmt.Errorf("%w: timestamp %q is not unix seconds", ErrStale, timestamp)
		}
		if d := now.Sub(time.Unix(secs, 0)); d > window || d < -window {
			return fmt.Errorf("%w: signed %s from now", ErrStale, d.Round(time.Second))
		}
	}
	return nil
}

// VerifyResponse checks a response's headers and its body (already read in full) with
// DefaultWindow. A download (a response with X-File-Hash and a 2xx status) is checked over
// the hash; the caller then compares the SHA-256 of the bytes it saved with that hash.
func VerifyResponse(pub ed25519.PublicKey, h http.Header, status int, body []byte, now time.Time) error {
	payload := body
	if hash := h.Get(HeaderFileHash); hash != "" && status/100 == 2 {
		payload = []byte(hash)
	}
	return Verify(pub, h.Get(HeaderTimestamp), payload, h.Get(HeaderSignature), now, DefaultWindow)
}
