package session

import (
	"testing"
	"unsafe"
)

// TestClientSize: every idle client socket holds a Client; it stays in the 352-byte size
// class (its times are kept as integers: a time.Time takes 24 bytes).
func TestClientSize(t *testing.T) {
	if n := unsafe.Sizeof(Client{}); n > 352 {
		t.Fatalf("a Client is %d bytes, more than the 352-byte size class", n)
	}
}
