package accounts

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestIssuedAtReadsBackExactly issues a token at every millisecond of a second and checks
// that the issued-at time read back is the one written: read through a float64, a third of
// them came back a millisecond early, before a password-change cut-off set at the same
// instant, and the token just answered by change-password was refused.
func TestIssuedAtReadsBackExactly(t *testing.T) {
	issuer := tokenIssuer{secret: []byte(strings.Repeat("s", 32)), ttl: time.Hour}
	base := time.Date(2026, 11, 23, 22, 4, 5, 0, time.UTC)
	for ms := 0; ms < 1000; ms++ {
		at := base.Add(time.Duration(ms)*time.Millisecond + 123*time.Microsecond)
		token, issued, err := issuer.issue("acc", "sid", at)
		if err != nil {
			t.Fatal(err)
		}
		c, err := issuer.parse(token, at)
		if err != nil {
			t.Fatalf("ms %d: parse: %v", ms, err)
		}
		want := at.Truncate(time.Millisecond)
		if !c.IssuedAt.Equal(want) || !issued.IssuedAt.Equal(want) {
			t.Fatalf("ms %d: issued-at read back as %s, want %s", ms, c.IssuedAt.Format(time.RFC3339Nano), want.Format(time.RFC3339Nano))
		}
		if c.IssuedAt.Before(want) {
			t.Fatalf("ms %d: token would be refused by a cut-off at its own issue time", ms)
		}
	}
}

func TestMilliTimeJSON(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want int64 // ms
	}{
		{"1700000000", 1700000000000}, {"1700000000.5", 1700000000500}, {"1700000000.123", 1700000000123},
		{"1700000000.1239", 1700000000123}, {"-1.5", -1500}, {"1.7e9", 1700000000000},
	} {
		var m MilliTime
		if err := json.Unmarshal([]byte(tc.in), &m); err != nil || m.UnixMilli() != tc.want {
			t.Errorf("%s: got %d, %v; want %d", tc.in, m.UnixMilli(), err, tc.want)
		}
		out, _ := json.Marshal(MilliTime{time.UnixMilli(tc.want)})
		var back MilliTime
		if err := json.Unmarshal(out, &back); err != nil || back.UnixMilli() != tc.want {
			t.Errorf("%d: round trip through %s gave %d, %v", tc.want, out, back.UnixMilli(), err)
		}
	}
	for _, bad := range []string{`"x"`, "1.x", "99999999999999999999", "1e999"} {
		var m MilliTime
		if err := json.Unmarshal([]byte(bad), &m); err == nil {
			t.Errorf("%s: accepted as %v", bad, m.Time)
		}
	}
}

// TestTokenLeeway: a token is refused once its expiry has passed by more than the leeway,
// and with no leeway at once; a 30 s leeway nobody chose used to accept it for half a
// minute.
func TestTokenLeeway(t *testing.T) {
	issued := time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC)
	for _, leeway := range []time.Duration{0, 5 * time.Second} {
		issuer := tokenIssuer{secret: []byte(strings.Repeat("s", 32)), ttl: time.Hour, leeway: leeway}
		token, _, err := issuer.issue("acc", "sid", issued)
		if err != nil {
			t.Fatal(err)
		}
		expiry := issued.Add(time.Hour)
		if _, err := issuer.parse(token, expiry.Add(-time.Second)); err != nil {
			t.Errorf("leeway %v: refused a second before expiry: %v", leeway, err)
		}
		if leeway > 0 {
			if _, err := issuer.parse(token, expiry.Add(leeway-time.Second)); err != nil {
				t.Errorf("leeway %v: refused within the leeway: %v", leeway, err)
			}
		}
		for _, late := range []time.Duration{leeway + time.Second, 29 * time.Second} {
			if _, err := issuer.parse(token, expiry.Add(late)); err == nil {
				t.Errorf("leeway %v: accepted %v after expiry", leeway, late)
			}
		}
	}
}
