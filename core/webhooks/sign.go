package webhooks

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"strconv"
	"strings"
	"time"
)

// Headers of a CUSTOM delivery. SIGNATURES.md documents them for receivers.
const (
	HeaderEvent     = "X-Keyward-Event"
	HeaderDelivery  = "X-Keyward-Delivery"
	HeaderTimestamp = "X-Keyward-Timestamp"
	HeaderSignature = "X-Keyward-Signature"
)

// signaturePrefix names the algorithm, so a later scheme can be told apart.
const signaturePrefix = "sha256="

// DefaultTolerance is the age (either way) beyond which Verify refuses a timestamp. It
// must cover clock skew and transit, and keep a captured request from being replayed
// later; every retry is signed afresh, so retries never need a longer window.
const DefaultTolerance = 5 * time.Minute

// Sign returns the X-Keyward-Signature value for body sent at timestamp (unix seconds):
// "sha256=" and the hex HMAC-SHA256, keyed with the integration secret, of
// "<timestamp>.<body>". The timestamp is inside the MAC so it cannot be changed to replay
// an old request as a new one.
func Sign(secret string, timestamp int64, body []byte) string {
	return signaturePrefix + hex.EncodeToString(mac(secret, timestamp, body))
}

func mac(secret string, timestamp int64, body []byte) []byte {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(strconv.FormatInt(timestamp, 10)))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// Verify reports whether header is a valid signature of body at timestamp under secret,
// and timestamp is within tolerance of now (zero tolerance means DefaultTolerance). The
// MAC comparison is constant-time. It is the reference for the receivers' snippets in
// SIGNATURES.md.
func Verify(secret, header string, timestamp int64, body []byte, now time.Time, tolerance time.Duration) bool {
	if secret == "" {
		return false
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	age := now.Sub(time.Unix(timestamp, 0))
	if age > tolerance || age < -tolerance {
		return false
	}
	hexMAC, ok := strings.CutPrefix(strings.TrimSpace(header), signaturePrefix)
	if !ok {
		return false
	}
	got, err := hex.DecodeString(hexMAC)
	if err != nil || len(got) != sha256.Size {
		return false
	}
	return hmac.Equal(got, mac(secret, timestamp, body))
}
