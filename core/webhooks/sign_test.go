package webhooks

import (
	"strings"
	"testing"
	"time"
)

// The vector was computed independently, with Python's hmac module (the SIGNATURES.md
// snippet): hmac.new(b"whsec_test", b'1700000000.{"id":"evt_1"}', hashlib.sha256).
const (
	vectorSecret = "whsec_test"
	vectorTime   = int64(1700000000)
	vectorBody   = `{"id":"evt_1"}`
	vectorSig    = "sha256=c89214b5b5da833daed6f0b8c5bb6bd58cea9022bd80ccc78230f3942d632925"
)

func TestSignKnownVector(t *testing.T) {
	if got := Sign(vectorSecret, vectorTime, []byte(vectorBody)); got != vectorSig {
		t.Fatalf("Sign = %s, want %s", got, vectorSig)
	}
}

func TestVerify(t *testing.T) {
	body := []byte(vectorBody)
	at := time.Unix(vectorTime, 0)
	cases := []struct {
		name      string
		secret    string
		header    string
		ts        int64
		body      []byte
		now       time.Time
		tolerance time.Duration
		want      bool
	}{
		{"valid", vectorSecret, vectorSig, vectorTime, body, at, 0, true},
		{"valid with spaces", vectorSecret, "  " + vectorSig + " ", vectorTime, body, at, 0, true},
		{"upper-case hex", vectorSecret, "sha256=" + strings.ToUpper(vectorSig[7:]), vectorTime, body, at, 0, true},
		{"within default tolerance", vectorSecret, vectorSig, vectorTime, body, at.Add(299 * time.Second), 0, true},
		{"too old", vectorSecret, vectorSig, vectorTime, body, at.Add(301 * time.Second), 0, false},
		{"too far in the future", vectorSecret, vectorSig, vectorTime, body, at.Add(-301 * time.Second), 0, false},
		{"old but within a longer tolerance", vectorSecret, vectorSig, vectorTime, body, at.Add(time.Hour), 2 * time.Hour, true},
		{"a day old", vectorSecret, vectorSig, vectorTime, body, at.Add(24 * time.Hour), time.Hour, false},
		{"wrong secret", "whsec_other", vectorSig, vectorTime, body, at, 0, false},
		{"empty secret", "", Sign("", vectorTime, body), vectorTime, body, at, 0, false},
		{"tampered body", vectorSecret, vectorSig, vectorTime, []byte(`{"id":"evt_2"}`), at, 0, false},
		{"tampered timestamp", vectorSecret, vectorSig, vectorTime + 1, body, at, 0, false},
		{"empty header", vectorSecret, "", vectorTime, body, at, 0, false},
		{"prefix only", vectorSecret, "sha256=", vectorTime, body, at, 0, false},
		{"bare hex", vectorSecret, vectorSig[7:], vectorTime, body, at, 0, false},
		{"other algorithm", vectorSecret, "sha1=" + vectorSig[7:], vectorTime, body, at, 0, false},
		{"not hex", vectorSecret, "sha256=zz" + vectorSig[9:], vectorTime, body, at, 0, false},
		{"truncated", vectorSecret, vectorSig[:len(vectorSig)-2], vectorTime, body, at, 0, false},
		{"extra bytes", vectorSecret, vectorSig + "00", vectorTime, body, at, 0, false},
	}
	for _, c := range cases {
		if got := Verify(c.secret, c.header, c.ts, c.body, c.now, c.tolerance); got != c.want {
			t.Errorf("%s: Verify = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestSignVerifyRoundTrip(t *testing.T) {
	now := time.Now()
	body := []byte(`{"id":"x","data":{"a":"ü <b>"}}`)
	sig := Sign("s3cret", now.Unix(), body)
	if !Verify("s3cret", sig, now.Unix(), body, now, time.Minute) {
		t.Fatal("a fresh signature does not verify")
	}
	if Sign("s3cret", now.Unix(), body) != sig {
		t.Fatal("Sign is not deterministic")
	}
	if Sign("s3cret", now.Unix()+1, body) == sig {
		t.Fatal("the timestamp is not covered by the signature")
	}
}
