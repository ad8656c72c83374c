// Package licensefile reads and verifies Keyward offline license files: a license signed
// with the application's Ed25519 key that a program checks without any network call. It
// imports nothing of the server; programs written in Go import it alone.
//
// A file is text that survives copy and paste (e-mail, chat, a text box): a BEGIN line,
// the base64 of the payload and of the signature joined by a dot and wrapped at 64
// columns, and an END line. Whitespace and line endings inside are ignored, so a file
// re-wrapped or saved with CRLF still verifies. Apart from that, a file has one valid
// text: the base64 is decoded strictly (unpadded base64url, the unused bits of the last
// character zero), so no other spelling of the same bytes verifies.
//
//	-----BEGIN KEYWARD LICENSE-----
//	eyJhcHBJZCI6IjQ5ZTc…
//	…MiOnt9fQ.Qk9PSy…
//	-----END KEYWARD LICENSE-----
//
// The payload is canonical JSON (the members of Payload in sorted order, no spaces); the
// signature covers "keyward-license-v1\n" followed by the payload bytes exactly as
// carried, so it never needs re-encoding to check.
package licensefile

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
)

// The wrapper lines.
const (
	BeginLine = "-----BEGIN KEYWARD LICENSE-----"
	EndLine   = "-----END KEYWARD LICENSE-----"
)

// signedPrefix separates license signatures from the app's other signatures (client
// answers start with a timestamp's digits).
const signedPrefix = "keyward-license-v1\n"

// Errors Verify answers; test them with errors.Is.
var (
	ErrMalformed    = errors.New("licensefile: not a Keyward license file")
	ErrBadSignature = errors.New("licensefile: the signature does not match (altered file, or another app's key)")
	ErrWrongApp     = errors.New("licensefile: the file is for another application")
	ErrWrongHWID    = errors.New("licensefile: the license is bound to another machine")
	ErrExpired      = errors.New("licensefile: the license has expired")
	ErrCheckInDue   = errors.New("licensefile: the check-in deadline has passed; go online to get a new file")
	ErrNotYetValid  = errors.New("licensefile: the file was issued in the future (wrong clock?)")
)

// Payload is what a file states. Times are RFC 3339 in UTC; an empty ExpiresAt never
// expires, an empty HWID is not bound to a machine. Members are declared in the order of
// their JSON names, so encoding/json writes them sorted (canonical form).
type Payload struct {
	AppID string `json:"appId"`
	// CheckInBy is when the program must go online again (and may fetch a new file).
	CheckInBy string `json:"checkInBy"`
	// Duration is the license's duration from activation, in seconds (0 = none).
	Duration  int64  `json:"duration"`
	ExpiresAt string `json:"expiresAt,omitempty"`
	HWID      string `json:"hwid,omitempty"`
	IssuedAt  string `json:"issuedAt"`
	Key       string `json:"key"`
	Level     int    `json:"level"`
	LicenseID string `json:"licenseId"`
	// Username is the user the license is activated by, when it is.
	Username string `json:"username,omitempty"`
	// Version is the payload format (FormatVersion).
	Version   int               `json:"v"`
	Variables map[string]string `json:"variables"`
}

// FormatVersion is the payload format this package writes and reads.
const FormatVersion = 1

// Encode signs p with the app's private key and answers the file (the server's side).
func Encode(key ed25519.PrivateKey, p Payload) ([]byte, error) {
	p.Version = FormatVersion
	if p.Variables == nil {
		p.Variables = map[string]string{}
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(p); err != nil {
		return nil, fmt.Errorf("licensefile: encode payload: %w", err)
	}
	payload := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	sig := ed25519.Sign(key, append([]byte(signedPrefix), payload...))
	inner := base64.RawURLEncoding.EncodeToString(payload) + "." + base64.RawURLEncoding.EncodeToString(sig)
	var out strings.Builder
	out.WriteString(BeginLine + "\n")
	for len(inner) > 64 {
		out.WriteString(inner[:64] + "\n")
		inner = inner[64:]
	}
	out.WriteString(inner + "\n" + EndLine + "\n")
	return []byte(out.String()), nil
}

// Options are the checks Verify makes besides the signature.
type Options struct {
	// Now is the time the deadlines are judged at (zero: time.Now()).
	Now time.Time
	// HWID is this machine's id; a file bound to another one is ErrWrongHWID. Empty
	// skips the check (a program that does not bind machines).
	HWID string
	// AppID, when set, must be the file's application (ErrWrongApp).
	AppID string
}

// Verify checks a file with the app's public key and the deadlines, and answers its
// payload. The payload is answered with ErrExpired, ErrCheckInDue and ErrWrongHWID too
// (the signature was good), so a program can say which license failed.
func Verify(file []byte, pub ed25519.PublicKey, o Options) (Payload, error) {
	payload, err := Decode(file, pub)
	if err != nil {
		return Payload{}, err
	}
	return payload, check(payload, o)
}

// Decode checks the signature only and answers the payload.
func Decode(file []byte, pub ed25519.PublicKey) (Payload, error) {
	text := string(file)
	start := strings.Index(text, BeginLine)
	if start < 0 {
		return Payload{}, fmt.Errorf("%w: no %s ... %s block", ErrMalformed, BeginLine, EndLine)
	}
	// The end line is looked for after the begin line: the two may share their dashes
	// ("-----BEGIN KEYWARD LICENSE-----END KEYWARD LICENSE-----").
	body := text[start+len(BeginLine):]
	end := strings.Index(body, EndLine)
	if end < 0 {
		return Payload{}, fmt.Errorf("%w: no %s ... %s block", ErrMalformed, BeginLine, EndLine)
	}
	inner := strings.Join(strings.Fields(body[:end]), "")
	p64, s64, found := strings.Cut(inner, ".")
	// Strict: the unused bits of a last character must be zero (what Encode writes), so
	// the same bytes have one spelling only and a file has exactly one valid text
	// (whitespace aside, removed above).
	canonical := base64.RawURLEncoding.Strict()
	raw, err1 := canonical.DecodeString(p64)
	sig, err2 := canonical.DecodeString(s64)
	if !found || err1 != nil || err2 != nil {
		return Payload{}, fmt.Errorf("%w: the block is not payload.signature in canonical base64url", ErrMalformed)
	}
	if len(pub) != ed25519.PublicKeySize || len(sig) != ed25519.SignatureSize ||
		!ed25519.Verify(pub, append([]byte(signedPrefix), raw...), sig) {
		return Payload{}, ErrBadSignature
	}
	var p Payload
	if err := json.Unmarshal(raw, &p); err != nil || p.Version != FormatVersion {
		return Payload{}, fmt.Errorf("%w: payload version %d", ErrMalformed, p.Version)
	}
	return p, nil
}

func check(p Payload, o Options) error {
	now := o.Now
	if now.IsZero() {
		now = time.Now()
	}
	if o.AppID != "" && p.AppID != o.AppID {
		return ErrWrongApp
	}
	if o.HWID != "" && p.HWID != "" && p.HWID != o.HWID {
		return ErrWrongHWID
	}
	issued, err := time.Parse(time.RFC3339, p.IssuedAt)
	if err != nil {
		return fmt.Errorf("%w: issuedAt", ErrMalformed)
	}
	// A little skew is allowed; a file from far in the future means a wound-back clock.
	if issued.After(now.Add(5 * time.Minute)) {
		return ErrNotYetValid
	}
	if p.ExpiresAt != "" {
		exp, err := time.Parse(time.RFC3339, p.ExpiresAt)
		if err != nil {
			return fmt.Errorf("%w: expiresAt", ErrMalformed)
		}
		if !now.Before(exp) {
			return ErrExpired
		}
	}
	due, err := time.Parse(time.RFC3339, p.CheckInBy)
	if err != nil {
		return fmt.Errorf("%w: checkInBy", ErrMalformed)
	}
	if !now.Before(due) {
		return ErrCheckInDue
	}
	return nil
}
