package passwords

import (
	"context"
	"errors"
	"strings"
	"testing"

	"golang.org/x/crypto/bcrypt"
)

var cheap = Params{MemoryKiB: 1024, Iterations: 1, Parallelism: 1}

func TestHashAndVerify(t *testing.T) {
	h := NewHasher(cheap, 2)
	ctx := context.Background()
	hash, err := h.Hash(ctx, "Secret-Pass-1")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(hash, "$argon2id$v=19$m=1024,t=1,p=1$") {
		t.Fatalf("hash %q", hash)
	}
	if err := h.Verify(ctx, hash, "Secret-Pass-1"); err != nil {
		t.Fatalf("right password: %v", err)
	}
	if err := h.Verify(ctx, hash, "Secret-Pass-2"); !errors.Is(err, ErrMismatch) {
		t.Fatalf("wrong password: %v", err)
	}
	other, _ := h.Hash(ctx, "Secret-Pass-1")
	if other == hash {
		t.Fatal("same salt twice")
	}
	if err := h.Verify(ctx, "", "anything"); !errors.Is(err, ErrMismatch) {
		t.Fatalf("empty hash: %v", err)
	}
}

func TestVerifyRefusesTamperedHashes(t *testing.T) {
	h := NewHasher(cheap, 1)
	for _, bad := range []string{
		"$argon2id$v=19$m=4194304,t=1,p=1$c2FsdHNhbHQ$a2V5", // 4 GiB of memory
		"$argon2id$v=19$m=1024,t=999,p=1$c2FsdHNhbHQ$a2V5",  // too many passes
		"$argon2i$v=19$m=1024,t=1,p=1$c2FsdHNhbHQ$a2V5",     // other variant
		"$argon2id$v=16$m=1024,t=1,p=1$c2FsdHNhbHQ$a2V5",    // other version
		"plain",
	} {
		err := h.Verify(context.Background(), bad, "x")
		if err == nil || errors.Is(err, ErrMismatch) {
			t.Fatalf("%q: %v", bad, err)
		}
	}
}

func TestHashWaitsForASlot(t *testing.T) {
	h := NewHasher(cheap, 1)
	h.slots <- struct{}{} // the only slot is busy
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := h.Hash(ctx, "x"); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v", err)
	}
}

// phpManualHash is the example of PHP's password_verify documentation: password_hash's
// $2y$ form, as a KeyAuth dump holds them.
const phpManualHash = "$2y$07$BCryptRequires22Chrcte/VlQH0piJtjXl.0t1XkA8pw9dMXTpOq"

func TestVerifyBcrypt(t *testing.T) {
	h := NewHasher(cheap, 1)
	ctx := context.Background()
	if err := h.Verify(ctx, phpManualHash, "rasmuslerdorf"); err != nil {
		t.Fatalf("PHP's $2y$ hash: %v", err)
	}
	if !NeedsRehash(phpManualHash) {
		t.Fatal("a bcrypt hash does not need a rehash")
	}
	argon, _ := h.Hash(ctx, "rasmuslerdorf")
	if NeedsRehash(argon) || NeedsRehash("") {
		t.Fatal("an argon2id hash (or none) needs a rehash")
	}
	// Cheap hashes from here: a cost-7 verification takes a second under -race.
	cheapHash := bcryptOf(t, "rasmuslerdorf")
	if err := h.Verify(ctx, cheapHash, "rasmuslerdorF"); !errors.Is(err, ErrMismatch) {
		t.Fatalf("wrong password: %v", err)
	}
	// $2a$ and $2b$ are the same algorithm as $2y$.
	for _, prefix := range []string{"$2a$", "$2b$", "$2y$"} {
		hash := prefix + strings.TrimPrefix(cheapHash, "$2y$")
		if err := h.Verify(ctx, hash, "rasmuslerdorf"); err != nil {
			t.Fatalf("%s: %v", prefix, err)
		}
	}
	// Only the first 72 bytes of a password count, as in PHP.
	long := strings.Repeat("x", 72)
	if err := h.Verify(ctx, bcryptOf(t, long), long+"and more"); err != nil {
		t.Fatalf("a password longer than 72 bytes: %v", err)
	}
}

func TestVerifyRefusesTamperedBcrypt(t *testing.T) {
	h := NewHasher(cheap, 1)
	ctx := context.Background()
	for _, bad := range []string{
		"$2y$31$BCryptRequires22Chrcte/VlQH0piJtjXl.0t1XkA8pw9dMXTpOq", // days per login
		"$2y$03$BCryptRequires22Chrcte/VlQH0piJtjXl.0t1XkA8pw9dMXTpOq",
		"$2y$07$BCryptRequires22Chrcte",
		"$2x$07$BCryptRequires22Chrcte/VlQH0piJtjXl.0t1XkA8pw9dMXTpOq", // PHP's buggy variant
	} {
		err := h.Verify(ctx, bad, "rasmuslerdorf")
		if err == nil || errors.Is(err, ErrMismatch) {
			t.Fatalf("Verify(%q) = %v, want a refusal of the hash", bad, err)
		}
	}
}

func bcryptOf(t *testing.T, password string) string {
	t.Helper()
	b, err := bcrypt.GenerateFromPassword([]byte(password), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	return "$2y$" + strings.TrimPrefix(string(b), "$2a$")
}
