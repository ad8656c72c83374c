package blobs

import (
	"errors"
	"strings"
	"testing"
)

func TestValidKey(t *testing.T) {
	good := []string{
		"a", "app1/file1", "A-Z_a.z/0-9", "a.b", "a/b/c/d", "x-", "a_",
		strings.Repeat("s", MaxSegmentLen),
		strings.Repeat("s", MaxKeyLen-MaxSegmentLen-1) + "/" + strings.Repeat("s", MaxSegmentLen), // 256 bytes
	}
	for _, k := range good {
		if err := ValidKey(k); err != nil {
			t.Errorf("ValidKey(%q) = %v, want nil", k, err)
		}
	}
	bad := []string{
		"", "/", "/a", "a/", "a//b", "..", "a/..", "../a", "a..b", ".", "./a", "a/.", ".a", "a/.b",
		`a\b`, "a b", "a\tb", "a\nb", "é", "a:b", "a@", "a~", "a+b", "a%20",
		strings.Repeat("s", MaxSegmentLen+1),
		strings.Repeat("ss/", 86), // 258 bytes
	}
	for _, k := range bad {
		if err := ValidKey(k); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ValidKey(%q) = %v, want ErrInvalidKey", k, err)
		}
	}
}

func TestValidPrefix(t *testing.T) {
	for _, p := range []string{"a", "app1/", "app1/f", "a/b/"} {
		if err := ValidPrefix(p); err != nil {
			t.Errorf("ValidPrefix(%q) = %v, want nil", p, err)
		}
	}
	for _, p := range []string{"", "/", "//", "a//", "/a/", "../", "a/../", ".x/", "a b/"} {
		if err := ValidPrefix(p); !errors.Is(err, ErrInvalidKey) {
			t.Errorf("ValidPrefix(%q) = %v, want ErrInvalidKey", p, err)
		}
	}
}
