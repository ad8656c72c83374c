package passwords

import (
	"context"
	"errors"
	"strings"
	"testing"
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
