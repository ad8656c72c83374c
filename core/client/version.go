package client

import (
	"strconv"
	"strings"
)

// CompareVersions orders two version strings: -1, 0 or 1. Versions are compared part by
// part, split at dots and dashes after an optional leading "v"; numeric parts compare as
// numbers (1.10 > 1.9), other parts as text, and a version with a pre-release suffix comes
// before the same version without one (1.0.0-beta < 1.0.0). An empty version is the lowest.
func CompareVersions(a, b string) int {
	pa, prea := splitVersion(a)
	pb, preb := splitVersion(b)
	for i := 0; i < max(len(pa), len(pb)); i++ {
		x, y := "0", "0"
		if i < len(pa) {
			x = pa[i]
		}
		if i < len(pb) {
			y = pb[i]
		}
		if c := comparePart(x, y); c != 0 {
			return c
		}
	}
	switch {
	case prea == preb:
		return 0
	case prea == "":
		return 1
	case preb == "":
		return -1
	}
	return comparePart(prea, preb)
}

func splitVersion(v string) (parts []string, pre string) {
	v = strings.TrimPrefix(strings.TrimPrefix(strings.TrimSpace(v), "v"), "V")
	if v == "" {
		return nil, ""
	}
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		v, pre = v[:i], v[i+1:]
	}
	return strings.Split(v, "."), pre
}

func comparePart(x, y string) int {
	nx, errx := strconv.ParseUint(x, 10, 64)
	ny, erry := strconv.ParseUint(y, 10, 64)
	switch {
	case errx == nil && erry == nil:
		switch {
		case nx < ny:
			return -1
		case nx > ny:
			return 1
		}
		return 0
	case errx == nil:
		return -1 // numbers before words
	case erry == nil:
		return 1
	}
	return strings.Compare(x, y)
}
