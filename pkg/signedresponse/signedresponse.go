// Package signedresponse verifies the Ed25519 signatures a Keyward server puts on the
// Client API responses of an application that enabled signResponses. It imports nothing
// of the server: a client program (or its tests) imports it alone.
//
// The scheme (version 2, X-Signature-Version: 2) binds each answer to the request it
// answers. The server signs Message: the line "keyward-response-v2", then one line each
// for the timestamp (X-Signature-Timestamp, unix seconds), the status code, the request's
// method, its path as sent, the hex SHA-256 of the request body bytes, the X-Nonce sent
// and the X-Signature-Challenge sent (empty lines when none), then "body" and the exact
// response body bytes, or, for a file download (a 2xx with X-File-Hash), "file-sha256" and
// the value of X-File-Hash. The signature travels in hex in X-Signature-Ed25519.
//
// So an answer verifies only for the request that was sent: a heartbeat answer of another
// session (another body), a check-license answer for another key, or any answer to an
// earlier call with another nonce or challenge does not. A client that wants every answer
// bound to one call (check, variables and other calls without a nonce) sends a fresh
// random X-Signature-Challenge with each request.
//
// A verifier must also refuse a timestamp too far from its clock (Window), or a recorded
// answer could be replayed later to the same request.
//
// Version 1 (the timestamp followed by the body, no X-Signature-Version) is not bound to
// the request and is refused (ErrVersion). Signatures are read strictly: 128 lowercase hex
// digits, a timestamp of 1 to 18 decimal digits, so an answer has one valid spelling.
package signedresponse

import (
	"crypto/ed25519"
	"crypto/sha256"
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

// Header names of the signature and of the request values it is bound to.
const (
	HeaderSignature = "X-Signature-Ed25519"
	HeaderTimestamp = "X-Signature-Timestamp"
	HeaderVersion   = "X-Signature-Version"
	HeaderFileHash  = "X-File-Hash"
	// HeaderNonce is the request header of the nonce the official SDKs send on login,
	// register, license, activate and heartbeat.
	HeaderNonce = "X-Nonce"
	// HeaderChallenge is an optional request header a client sets to a fresh random value
	// per call; the answer's signature covers it.
	HeaderChallenge = "X-Signature-Challenge"
)

// Version is the value of X-Signature-Version this package signs and accepts.
const Version = "2"

// messagePrefix separates response signatures from the app's other signatures (license
// files sign "keyward-license-v1\n" followed by their payload).
const messagePrefix = "keyward-response-v2\n"

// DefaultWindow is the freshness a verifier should allow by default: the answer's
// timestamp at most this far from the verifier's clock, either way (clock skew).
const DefaultWindow = 5 * time.Minute

// Errors answered by the checks; wrap-tested with errors.Is. Each means: do not trust the
// answer.
var (
	ErrUnsigned     = errors.New("signedresponse: the response carries no signature")
	ErrVersion      = errors.New("signedresponse: the response is not signed with version " + Version + " (an unbound version-1 signature, or an unknown version)")
	ErrMalformed    = errors.New("signedresponse: the signature headers are malformed")
	ErrBadSignature = errors.New("signedresponse: the signature does not match (forged or altered response, an answer to another request, or another key)")
	ErrStale        = errors.New("signedresponse: the signature timestamp is outside the freshness window")
	ErrBadKey       = errors.New("signedresponse: not an Ed25519 public key")
)

// Request is the request an answer is bound to, as the client sent it.
type Request struct {
	// Method is the HTTP method ("POST").
	Method string
	// Path is the URL path as sent, percent-encoded, without the query
	// ("/api/client/heartbeat"); behind a proxy that rewrites paths, the path the server
	// received.
	Path string
	// Body is the exact request body bytes sent (none: empty).
	Body []byte
	// BodySHA256, when not nil, stands for the SHA-256 of Body (a server hashes the body
	// as it is read and does not keep it).
	BodySHA256 []byte
	// Nonce is the X-Nonce header sent, or "".
	Nonce string
	// Challenge is the X-Signature-Challenge header sent, or "".
	Challenge string
}

// RequestOf answers the binding of a request a client built: its method, path, nonce and
// challenge headers, and body, the exact bytes it sent.
func RequestOf(r *http.Request, body []byte) Request {
	return Request{Method: r.Method, Path: r.URL.EscapedPath(), Body: body,
		Nonce: r.Header.Get(HeaderNonce), Challenge: r.Header.Get(HeaderChallenge)}
}

func (r Request) bodyDigest() []byte {
	if r.BodySHA256 != nil {
		return r.BodySHA256
	}
	sum := sha256.Sum256(r.Body)
	return sum[:]
}

// Answer is what the server answered: its status, its body, and for a download the
// X-File-Hash the signature covers instead of the body.
type Answer struct {
	Status int
	// FileHash is the X-File-Hash of a 2xx download, else "".
	FileHash string
	Body     []byte
}

// AnswerOf reads the Answer of a response whose body has been read in full: a 2xx with
// X-File-Hash is a download, signed over the hash.
func AnswerOf(h http.Header, status int, body []byte) Answer {
	a := Answer{Status: status, Body: body}
	if hash := h.Get(HeaderFileHash); hash != "" && status/100 == 2 {
		a.FileHash = hash
	}
	return a
}

// Message answers the bytes that are signed (see the package comment). None of the
// request's lines can hold a line break: HTTP carries none in a path or a header value.
func Message(timestamp string, req Request, a Answer) []byte {
	var b strings.Builder
	b.Grow(len(messagePrefix) + len(timestamp) + len(req.Path) + len(req.Nonce) + len(req.Challenge) + len(a.FileHash) + len(a.Body) + 120)
	b.WriteString(messagePrefix)
	for _, line := range []string{timestamp, strconv.Itoa(a.Status), req.Method, req.Path,
		hex.EncodeToString(req.bodyDigest()), req.Nonce, req.Challenge} {
		b.WriteString(line)
		b.WriteByte('\n')
	}
	if a.FileHash != "" {
		b.WriteString("file-sha256\n")
		b.WriteString(a.FileHash)
	} else {
		b.WriteString("body\n")
		b.Write(a.Body)
	}
	return []byte(b.String())
}

// Sign answers the hex signature of Message (the server side of the scheme).
func Sign(key ed25519.PrivateKey, timestamp string, req Request, a Answer) string {
	return hex.EncodeToString(ed25519.Sign(key, Message(timestamp, req, a)))
}

// ParsePublicKey reads the app's public key in either form the dashboard shows: the
// base64 of the 32 raw bytes (padded or not, canonical), or the PEM "PUBLIC KEY" block
// (PKIX).
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
	raw, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		raw, err = base64.RawStdEncoding.Strict().DecodeString(s)
	}
	if err != nil || len(raw) != ed25519.PublicKeySize || strings.ContainsAny(s, "\r\n") {
		return nil, fmt.Errorf("%w: want the base64 of %d bytes or a PEM block", ErrBadKey, ed25519.PublicKeySize)
	}
	return ed25519.PublicKey(raw), nil
}

// validTimestamp: 1 to 18 decimal digits, nothing else (no sign, space or exponent), the
// rule every snippet of docs/LICENSING.md applies too.
func validTimestamp(s string) bool {
	if len(s) == 0 || len(s) > 18 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// validSignature: exactly 128 lowercase hex digits, the one spelling the server writes.
func validSignature(s string) bool {
	if len(s) != 2*ed25519.SignatureSize {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !('0' <= s[i] && s[i] <= '9' || 'a' <= s[i] && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// Verify checks an answer's signature headers against the request it answers and the
// answer itself, and that the timestamp is within window of now (window 0 skips the
// freshness check; a negative one is DefaultWindow).
func Verify(pub ed25519.PublicKey, req Request, h http.Header, a Answer, now time.Time, window time.Duration) error {
	timestamp, signature := h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if signature == "" || timestamp == "" {
		return ErrUnsigned
	}
	if v := h.Get(HeaderVersion); v != Version {
		return fmt.Errorf("%w: X-Signature-Version %q", ErrVersion, v)
	}
	if !validTimestamp(timestamp) {
		return fmt.Errorf("%w: timestamp %q is not 1 to 18 decimal digits", ErrMalformed, timestamp)
	}
	if !validSignature(signature) {
		return fmt.Errorf("%w: the signature is not %d lowercase hex digits", ErrMalformed, 2*ed25519.SignatureSize)
	}
	if len(pub) != ed25519.PublicKeySize {
		return fmt.Errorf("%w: a public key of %d bytes", ErrBadKey, len(pub))
	}
	sig, _ := hex.DecodeString(signature)
	if !ed25519.Verify(pub, Message(timestamp, req, a), sig) {
		return ErrBadSignature
	}
	if window < 0 {
		window = DefaultWindow
	}
	if window > 0 {
		secs, _ := strconv.ParseInt(timestamp, 10, 64) // 18 digits always fit
		if d := now.Sub(time.Unix(secs, 0)); d > window || d < -window {
			return fmt.Errorf("%w: signed %s from now", ErrStale, d.Round(time.Second))
		}
	}
	return nil
}

// VerifyResponse checks a response (its body already read in full) to req with
// DefaultWindow. A download (a 2xx with X-File-Hash) is checked over the hash; the caller
// then compares the SHA-256 of the bytes it saved with that hash.
func VerifyResponse(pub ed25519.PublicKey, req Request, h http.Header, status int, body []byte, now time.Time) error {
	return Verify(pub, req, h, AnswerOf(h, status, body), now, DefaultWindow)
}
