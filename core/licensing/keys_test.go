package licensing

import (
	"crypto/ed25519"
	"testing"

	"github.com/keyward/keyward/pkg/signedresponse"
)

func TestKeys(t *testing.T) {
	stored := NewKey()
	if stored == NewKey() {
		t.Fatal("two keys are equal")
	}
	priv, err := ParseKey(stored)
	if err != nil {
		t.Fatal(err)
	}
	pub, err := PublicOf(stored)
	if err != nil {
		t.Fatal(err)
	}
	for _, form := range []string{pub.Base64, pub.PEM} {
		k, err := signedresponse.ParsePublicKey(form)
		if err != nil || !k.Equal(priv.Public().(ed25519.PublicKey)) {
			t.Fatalf("public form %q = %v, %v", form, k, err)
		}
	}
	if _, err := ParseKey("not-a-key"); err == nil {
		t.Fatal("ParseKey accepted garbage")
	}
	if p, err := PublicOf(""); err != nil || p != (PublicKey{}) {
		t.Fatalf("PublicOf(\"\") = %+v, %v", p, err)
	}
}
