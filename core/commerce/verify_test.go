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
	"testing"
	"time"
)

// hexMAC is written here from each store's documentation, not taken from Sign.
func hexMAC(h func() hash.Hash, secret string, parts ...string) string {
	m := hmac.New(h, []byte(secret))
	for _, p := range parts {
		m.Write([]byte(p))
	}
	return hex.EncodeToString(m.Sum(nil))
}

func TestVerifyEachStoresScheme(t *testing.T) {
	now := time.Unix(1_760_000_000, 0)
	ts := fmt.Sprint(now.Unix())
	body := `{"id":"evt_1","type":"checkout.session.completed"}`
	const secret = "whsec_test"
	cases := []struct {
		p      Provider
		header string
		value  string
	}{
		{Stripe, "Stripe-Signature", "t=" + ts + ",v1=" + hexMAC(sha256.New, secret, ts, ".", body)},
		// Rotation: an old secret's v1 first, the current one second.
		{Stripe, "Stripe-Signature", "t=" + ts + ",v1=" + hexMAC(sha256.New, "old", ts, ".", body) + ",v1=" + hexMAC(sha256.New, secret, ts, ".", body) + ",v0=ff"},
		{Paddle, "Paddle-Signature", "ts=" + ts + ";h1=" + hexMAC(sha256.New, secret, ts, ":", body)},
		{LemonSqueezy, "X-Signature", hexMAC(sha256.New, secret, body)},
		{Sellix, "X-Sellix-Signature", hexMAC(sha512.New, secret, body)},
		{Shoppy, "X-Shoppy-Signature", hexMAC(sha512.New, secret, body)},
		{Shoppy, "X-Shoppex-Signature", hexMAC(sha512.New, secret, body)},
		{SellApp, "Signature", hexMAC(sha256.New, secret, body)},
	}
	for _, c := range cases {
		h := http.Header{}
		h.Set(c.header, c.value)
		if err := Verify(c.p, secret, h, []byte(body), now); err != nil {
			t.Errorf("%s %s: %v", c.p, c.header, err)
		}
		// Any change of the body, or another secret, is refused.
		if err := Verify(c.p, secret, h, []byte(body+" "), now); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: altered body: %v", c.p, err)
		}
		if err := Verify(c.p, "other", h, []byte(body), now); !errors.Is(err, ErrBadSignature) {
			t.Errorf("%s: other secret: %v", c.p, err)
		}
		if err := Verify(c.p, secret, http.Header{}, []byte(body), now); !errors.Is(err, ErrNoSignature) {
			t.Errorf("%s: no header: %v", c.p, err)
		}
		// Sign (used by tests and the load run) agrees with the documented scheme.
		name, value := Sign(c.p, secret, []byte(body), now)
		h2 := http.Header{}
		h2.Set(name, value)
		if err := Verify(c.p, secret, h2, []byte(body), now); err != nil {
			t.Errorf("%s: Sign's header refused: %v", c.p, err)
		}
	}
	if err := Verify(Gumroad, secret, http.Header{}, []byte("sale_id=1"), now); err != nil {
		t.Errorf("gumroad trusts the receiver path: %v", err)
	}
	if err := Verify("nosuch", secret, http.Header{}, nil, now); err == nil {
		t.Error("an unknown store verified")
	}
}

func TestVerifyTimestampTolerance(t *testing.T) {
	now := time.Unix(1_760_000_000, 0)
	body := `{"event_id":"evt_1"}`
	for _, p := range []Provider{Stripe, Paddle} {
		for _, skew := range []time.Duration{-301 * time.Second, 301 * time.Second, 24 * time.Hour} {
			name, value := Sign(p, "s", []byte(body), now.Add(skew))
			h := http.Header{}
			h.Set(name, value)
			if err := Verify(p, "s", h, []byte(body), now); !errors.Is(err, ErrStale) {
				t.Errorf("%s signed %v from now: %v, want ErrStale", p, skew, err)
			}
		}
		name, value := Sign(p, "s", []byte(body), now.Add(-299*time.Second))
		h := http.Header{}
		h.Set(name, value)
		if err := Verify(p, "s", h, []byte(body), now); err != nil {
			t.Errorf("%s within the tolerance: %v", p, err)
		}
	}
	// Malformed headers are refused, never a panic.
	for _, v := range []string{"t=", "v1=00", "t=abc,v1=00", "t=1,v1=zz", ",,,", "t=1760000000"} {
		h := http.Header{}
		h.Set("Stripe-Signature", v)
		if err := Verify(Stripe, "s", h, []byte(body), now); !errors.Is(err, ErrBadSignature) {
			t.Errorf("Stripe-Signature %q: %v", v, err)
		}
	}
}
