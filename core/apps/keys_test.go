package apps

import (
	"regexp"
	"strings"
	"testing"
)

func TestLicenseKeysAreCrockfordGroupsWithOptionalPrefix(t *testing.T) {
	grouped := regexp.MustCompile(`^[0-9A-HJKMNP-TV-Z]{5}(-[0-9A-HJKMNP-TV-Z]{5}){3}$`)
	seen := map[string]bool{}
	counts := map[byte]int{}
	for i := 0; i < 2000; i++ {
		k := newLicenseKey("")
		if !grouped.MatchString(k) || seen[k] {
			t.Fatalf("key %q", k)
		}
		seen[k] = true
		for j := 0; j < len(k); j++ {
			counts[k[j]]++
		}
	}
	// Every symbol of the alphabet shows up: the generator is not stuck on a subset.
	for i := 0; i < len(crockford); i++ {
		if counts[crockford[i]] == 0 {
			t.Fatalf("symbol %c never drawn", crockford[i])
		}
	}
	if k := newLicenseKey("pro"); !strings.HasPrefix(k, "PRO-") || !grouped.MatchString(k[4:]) {
		t.Fatalf("prefixed key %q", k)
	}
	if bits := keyGroups * keyGroupLen * 5; bits < 100 {
		t.Fatalf("only %d bits of entropy", bits)
	}
}
