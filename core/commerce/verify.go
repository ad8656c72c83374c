package commerce

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Provider names a store Keyward receives sales from.
type Provider string

// The stores.
const (
	Stripe       Provider = "stripe"
	Paddle       Provider = "paddle"
	LemonSqueezy Provider = "lemonsqueezy"
	Sellix       Provider = "sellix"
	Shoppy       Provider = "shoppy"
	SellApp      Provider = "sellapp"
	Gumroad      Provider = "gumroad"
)

// Providers is every store, in documentation order.
func Providers() []Provider {
	return []Provider{Stripe, Paddle, LemonSqueezy, Sellix, Shoppy, SellApp, Gumroad}
}

// Known reports whether p is one of the stores.
func (p Provider) Known() bool {
	for _, q := range Providers() {
		if p == q {
			return true
		}
	}
	return false
}

// Tolerance is how far a signed timestamp (Stripe, Paddle) may be from now.
const Tolerance = 300 * time.Second

// Signature refusals. Each is a 401 at the receiver and changes nothing.
var (
	ErrNoSignature  = errors.New("commerce: signature header missing")
	ErrBadSignature = errors.New("commerce: signature does not match")
	ErrStale        = errors.New("commerce: signed timestamp outside the tolerance")
)

// Verify checks body and header against the connection's secret by the store's documented
// scheme; nil means the delivery is the store's.
func Verify(p Provider, secret string, header http.Header, body []byte, now time.Time) error {
	switch p {
	case Stripe:
		return verifyTimestamped(header.Get("Stripe-Signature"), ",", "t", "v1", ".", secret, body, now)
	case Paddle:
		return verifyTimestamped(header.Get("Paddle-Signature"), ";", "ts", "h1", ":", secret, body, now)
	case LemonSqueezy:
		return verifyBody(sha256.New, header.Get("X-Signature"), secret, body)
	case Sellix:
		return verifyBody(sha512.New, header.Get("X-Sellix-Signature"), secret, body)
	case Shoppy:
		sig := header.Get("X-Shoppy-Signature")
		if sig == "" {
			sig = header.Get("X-Shoppex-Signature")
		}
		return verifyBody(sha512.New, sig, secret, body)
	case SellApp:
		return verifyBody(sha256.New, header.Get("Signature"), secret, body)
	case Gumroad:
		return nil // the receiver path is the secret (doc.go)
	}
	return fmt.Errorf("commerce: unknown store %q", p)
}

// verifyBody compares a hex HMAC of the body.
func verifyBody(h func() hash.Hash, sig, secret string, body []byte) error {
	if sig == "" {
		return ErrNoSignature
	}
	got, err := hex.DecodeString(strings.TrimSpace(sig))
	if err != nil {
		return ErrBadSignature
	}
	m := hmac.New(h, []byte(secret))
	m.Write(body)
	if !hmac.Equal(got, m.Sum(nil)) {
		return ErrBadSignature
	}
	return nil
}

// verifyTimestamped checks a header of key=value parts (Stripe's and Paddle's): one
// timestamp, one or more signatures, each a hex HMAC-SHA256 of timestamp+sep+body.
func verifyTimestamped(h, partSep, tsKey, sigKey, sep, secret string, body []byte, now time.Time) error {
	if h == "" {
		return ErrNoSignature
	}
	var ts string
	var sigs [][]byte
	for _, part := range strings.Split(h, partSep) {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			continue
		}
		switch k {
		case tsKey:
			ts = v
		case sigKey:
			if b, err := hex.DecodeString(v); err == nil {
				sigs = append(sigs, b)
			}
		}
	}
	if ts == "" || len(sigs) == 0 {
		return ErrBadSignature
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return ErrBadSignature
	}
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(ts + sep))
	m.Write(body)
	want := m.Sum(nil)
	matched := false
	for _, s := range sigs {
		// Every candidate is compared (no early exit): the time taken says nothing of which matched.
		if hmac.Equal(s, want) {
			matched = true
		}
	}
	if !matched {
		return ErrBadSignature
	}
	if d := now.Sub(time.Unix(secs, 0)); d > Tolerance || d < -Tolerance {
		return ErrStale
	}
	return nil
}

// Sign makes the header a store would send for body, for tests and for the load generator:
// the header's name and value.
func Sign(p Provider, secret string, body []byte, now time.Time) (name, value string) {
	mac := func(h func() hash.Hash, msg ...[]byte) string {
		m := hmac.New(h, []byte(secret))
		for _, b := range msg {
			m.Write(b)
		}
		return hex.EncodeToString(m.Sum(nil))
	}
	ts := strconv.FormatInt(now.Unix(), 10)
	switch p {
	case Stripe:
		return "Stripe-Signature", "t=" + ts + ",v1=" + mac(sha256.New, []byte(ts+"."), body)
	case Paddle:
		return "Paddle-Signature", "ts=" + ts + ";h1=" + mac(sha256.New, []byte(ts+":"), body)
	case LemonSqueezy:
		return "X-Signature", mac(sha256.New, body)
	case Sellix:
		return "X-Sellix-Signature", mac(sha512.New, body)
	case Shoppy:
		return "X-Shoppy-Signature", mac(sha512.New, body)
	case SellApp:
		return "Signature", mac(sha256.New, body)
	}
	return "", ""
}
