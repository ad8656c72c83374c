// Package geoiptest writes small MaxMind-format (mmdb) databases for tests, so GeoIP code
// is tested against real files without shipping or downloading MaxMind's data.
package geoiptest

import (
	"cmp"
	"net"
	"os"
	"slices"
	"testing"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// Write creates a GeoLite2-Country style database at path. entries maps a CIDR
// ("192.0.2.0/24", "2001:db8::/32") to the ISO code stored as country.iso_code; an empty
// code stores a record with no country member (as MaxMind does for networks it knows only
// the continent of). Overlapping CIDRs are fine: the more specific one wins for the
// addresses it covers. Reserved ranges (documentation, private) are allowed so tests can
// use them. The IPv4 space is also reachable through ::ffff:0:0/96, as in MaxMind's files.
func Write(t testing.TB, path string, entries map[string]string) {
	t.Helper()
	WriteType(t, path, "GeoLite2-Country", entries)
}

// WriteType is Write with a chosen database type in the metadata, to test readers that
// look at it.
func WriteType(t testing.TB, path, databaseType string, entries map[string]string) {
	t.Helper()
	tree, err := mmdbwriter.New(mmdbwriter.Options{
		DatabaseType:            databaseType,
		Description:             map[string]string{"en": "Keyward test database"},
		Languages:               []string{"en"},
		IncludeReservedNetworks: true,
		RecordSize:              24,
	})
	if err != nil {
		t.Fatalf("geoiptest: new tree: %v", err)
	}

	type entry struct {
		network *net.IPNet
		code    string
	}
	list := make([]entry, 0, len(entries))
	for cidr, code := range entries {
		_, network, err := net.ParseCIDR(cidr)
		if err != nil {
			t.Fatalf("geoiptest: entry %q: %v", cidr, err)
		}
		list = append(list, entry{network, code})
	}
	// The writer replaces what an insert covers, so broader networks go in first and
	// more specific ones then carve into them; the order is fixed (not map order) so a
	// database is the same on every run.
	slices.SortFunc(list, func(a, b entry) int {
		return cmp.Or(cmp.Compare(treeBits(a.network), treeBits(b.network)),
			cmp.Compare(a.network.String(), b.network.String()))
	})
	for _, e := range list {
		rec := mmdbtype.Map{}
		if e.code != "" {
			rec["country"] = mmdbtype.Map{"iso_code": mmdbtype.String(e.code)}
		} else {
			rec["continent"] = mmdbtype.Map{"code": mmdbtype.String("EU")}
		}
		if err := tree.Insert(e.network, rec); err != nil {
			t.Fatalf("geoiptest: insert %s: %v", e.network, err)
		}
	}

	f, err := os.Create(path)
	if err != nil {
		t.Fatalf("geoiptest: %v", err)
	}
	if _, err := tree.WriteTo(f); err != nil {
		_ = f.Close()
		t.Fatalf("geoiptest: write %s: %v", path, err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("geoiptest: close %s: %v", path, err)
	}
}

// treeBits is a network's prefix length in the writer's 128-bit tree, where IPv4 networks
// sit under ::/96.
func treeBits(n *net.IPNet) int {
	ones, bits := n.Mask.Size()
	if bits == 32 {
		ones += 96
	}
	return ones
}
