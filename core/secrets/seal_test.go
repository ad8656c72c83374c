package secrets

import (
	"errors"
	"strings"
	"testing"
)

func TestBox(t *testing.T) {
	box, err := NewBox([]byte(strings.Repeat("k", 32)))
	if err != nil {
		t.Fatal(err)
	}
	const secret = "JBSWY3DPEHPK3PXP"
	sealed, err := box.Seal(secret, "account/a1/twoFactorSecret")
	if err != nil {
		t.Fatal(err)
	}
	if !box.Sealed(sealed) || strings.Contains(sealed, secret) {
		t.Fatalf("sealed value %q", sealed)
	}
	again, _ := box.Seal(secret, "account/a1/twoFactorSecret")
	if again == sealed {
		t.Fatal("two seals of one value are equal: the nonce is not fresh")
	}
	if got, err := box.Open(sealed, "account/a1/twoFactorSecret"); err != nil || got != secret {
		t.Fatalf("Open = %q, %v", got, err)
	}
	// Another record or field, another key, an altered value: refused, never garbage.
	other, _ := NewBox([]byte(strings.Repeat("o", 32)))
	altered := sealed[:len(sealed)-2] + "AA"
	for name, open := range map[string]func() (string, error){
		"other record": func() (string, error) { return box.Open(sealed, "account/a2/twoFactorSecret") },
		"other key":    func() (string, error) { return other.Open(sealed, "account/a1/twoFactorSecret") },
		"altered":      func() (string, error) { return box.Open(altered, "account/a1/twoFactorSecret") },
		"truncated":    func() (string, error) { return box.Open(SealedPrefix+"AAAA", "account/a1/twoFactorSecret") },
	} {
		if got, err := open(); !errors.Is(err, ErrCannotOpen) || got != "" {
			t.Errorf("%s: Open = %q, %v; want ErrCannotOpen", name, got, err)
		}
	}
	// Values stored in clear before encryption at rest read as they are; empty stays empty.
	if got, err := box.Open(secret, "x"); err != nil || got != secret || box.Sealed(secret) {
		t.Fatalf("clear value: %q %v", got, err)
	}
	if s, _ := box.Seal("", "x"); s != "" {
		t.Fatalf("Seal(\"\") = %q", s)
	}
	if _, err := NewBox([]byte("short")); err == nil {
		t.Fatal("NewBox accepted a short key")
	}
}

// BenchmarkBoxOpen is the cost sealing adds to every read of an account with 2FA (two
// opens) or of a CUSTOM integration (one).
func BenchmarkBoxOpen(b *testing.B) {
	box, _ := NewBox([]byte(strings.Repeat("k", 32)))
	sealed, _ := box.Seal("JBSWY3DPEHPK3PXPJBSWY3DPEHPK3PXP", "account/a1/twoFactorSecret")
	for b.Loop() {
		if _, err := box.Open(sealed, "account/a1/twoFactorSecret"); err != nil {
			b.Fatal(err)
		}
	}
}
