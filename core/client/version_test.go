package client

import "testing"

func TestCompareVersions(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"1.0.0", "1.0.0", 0}, {"1.0", "1.0.0", 0}, {"v1.2", "1.2", 0},
		{"1.10.0", "1.9.9", 1}, {"1.9", "1.10", -1},
		{"2.0.0", "1.99.99", 1}, {"1.0.0-beta", "1.0.0", -1}, {"1.0.0", "1.0.0-rc1", 1},
		{"1.0.0-alpha", "1.0.0-beta", -1}, {"", "0.0.1", -1}, {"1.0.0", "", 1},
		{"1.0a", "1.0b", -1}, {"1.2", "1.a", -1},
	} {
		if got := CompareVersions(tc.a, tc.b); got != tc.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
		if got := CompareVersions(tc.b, tc.a); got != -tc.want {
			t.Errorf("CompareVersions(%q, %q) = %d, want %d (antisymmetry)", tc.b, tc.a, got, -tc.want)
		}
	}
}
