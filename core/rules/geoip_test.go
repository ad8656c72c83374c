package rules_test

import (
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/core/rules"
	"github.com/keyward/keyward/internal/geoiptest"
)

var testEntries = map[string]string{
	"81.2.69.0/24":    "GB",
	"81.2.69.160/27":  "IE", // carved out of the /24 above
	"2001:db8::/32":   "DE",
	"2001:db8:1::/48": "fr", // lower case in the data, upper case out
	"198.51.100.0/24": "",   // record without a country
	"203.0.113.0/24":  "XK", // not an assigned ISO code
	"192.0.2.0/24":    "EU", // region code, not a country
}

func writeDB(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "GeoLite2-Country.mmdb")
	geoiptest.Write(t, path, testEntries)
	return path
}

func TestGeoIPLookups(t *testing.T) {
	g, err := rules.OpenGeoIP(writeDB(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = g.Close() })

	var _ rules.CountryResolver = g
	tests := []struct {
		ip   string
		want string // "" = unknown
	}{
		{"81.2.69.1", "GB"},
		{"81.2.69.255", "GB"},
		{"81.2.69.160", "IE"},
		{"81.2.69.191", "IE"},
		{"81.2.69.192", "GB"},
		{"::ffff:81.2.69.142", "GB"}, // v4-mapped is the IPv4 address
		{"2001:db8::1", "DE"},
		{"2001:db8:ffff:ffff::1", "DE"},
		{"2001:db8:1::5", "FR"},
		{"2001:db8:1:ffff::5", "FR"},
		{"2001:db8:2::5", "DE"},
		// Misses.
		{"81.2.68.255", ""},
		{"8.8.8.8", ""},
		{"2001:db9::1", ""},
		{"::1", ""},
		{"198.51.100.7", ""}, // found, but no country
		{"203.0.113.7", ""},  // found, unassigned code
		{"192.0.2.7", ""},    // found, region code
	}
	for _, tc := range tests {
		got, ok := g.Country(netip.MustParseAddr(tc.ip))
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("Country(%s) = %q, %v; want %q, %v", tc.ip, got, ok, tc.want, tc.want != "")
		}
	}
	if got, ok := g.Country(netip.Addr{}); ok || got != "" {
		t.Errorf("Country(invalid) = %q, %v; want unknown", got, ok)
	}
	if got, ok := g.Country(netip.MustParseAddr("2001:db8::1%eth0")); !ok || got != "DE" {
		t.Errorf("Country(zoned) = %q, %v; want DE", got, ok)
	}

	if g.DatabaseType() != "GeoLite2-Country" {
		t.Errorf("DatabaseType = %q", g.DatabaseType())
	}
	if bt := g.BuildTime(); time.Since(bt) > time.Hour || time.Since(bt) < -time.Minute {
		t.Errorf("BuildTime = %v, want about now", bt)
	}
}

func TestGeoIPCityDatabase(t *testing.T) {
	path := filepath.Join(t.TempDir(), "GeoLite2-City.mmdb")
	geoiptest.WriteType(t, path, "GeoLite2-City", map[string]string{"2001:db8::/32": "JP", "81.2.69.0/24": "GB"})
	g, err := rules.OpenGeoIP(path)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	if got, ok := g.Country(netip.MustParseAddr("2001:db8::1")); got != "JP" || !ok {
		t.Fatalf("Country = %q, %v; want JP", got, ok)
	}
	if got, ok := g.Country(netip.MustParseAddr("81.2.69.1")); got != "GB" || !ok {
		t.Fatalf("Country = %q, %v; want GB", got, ok)
	}
}

func TestGeoIPRefusesDatabaseWithoutCountries(t *testing.T) {
	path := filepath.Join(t.TempDir(), "GeoLite2-ASN.mmdb")
	geoiptest.WriteType(t, path, "GeoLite2-ASN", map[string]string{"81.2.69.0/24": "GB"})
	g, err := rules.OpenGeoIP(path)
	if err == nil {
		g.Close()
		t.Fatal("OpenGeoIP accepted an ASN database")
	}
	if !strings.Contains(err.Error(), "GeoLite2-ASN") || !strings.Contains(err.Error(), "no country data") {
		t.Fatalf("error %q does not explain the refusal", err)
	}
}

func TestGeoIPMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.mmdb")
	g, err := rules.OpenGeoIP(path)
	if err == nil {
		g.Close()
		t.Fatal("OpenGeoIP opened a missing file")
	}
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %q: want fs.ErrNotExist naming the path", err)
	}
}

func TestGeoIPCorruptFiles(t *testing.T) {
	good, err := os.ReadFile(writeDB(t))
	if err != nil {
		t.Fatal(err)
	}
	// The data section sits between the search tree and the metadata; scribbling over
	// the end of the tree and the start of the data leaves the file openable but wrong,
	// which only verification notices.
	scribbled := append([]byte(nil), good...)
	meta := strings.LastIndex(string(good), "\xab\xcd\xefMaxMind.com")
	if meta < 0 {
		t.Fatal("test database has no metadata marker")
	}
	for i := meta / 2; i < meta-16; i++ {
		scribbled[i] = 0xff
	}

	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"not a database", []byte("this is a text file, not a MaxMind DB\n")},
		{"random bytes", func() []byte {
			b := make([]byte, 4096)
			for i := range b {
				b[i] = byte(i*131 + 7)
			}
			return b
		}()},
		{"truncated", good[:len(good)/2]},
		{"scribbled", scribbled},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.mmdb")
			if err := os.WriteFile(path, tc.data, 0o600); err != nil {
				t.Fatal(err)
			}
			g, err := rules.OpenGeoIP(path)
			if err == nil {
				g.Close()
				t.Fatal("OpenGeoIP accepted a corrupt file")
			}
			if !strings.Contains(err.Error(), "open GeoIP database "+path) {
				t.Fatalf("error %q does not name the operation and file", err)
			}
			t.Log(err)
		})
	}
}

func TestGeoIPClose(t *testing.T) {
	g, err := rules.OpenGeoIP(writeDB(t))
	if err != nil {
		t.Fatal(err)
	}
	addr := netip.MustParseAddr("81.2.69.1")

	// Lookups racing Close must neither crash nor race (run with -race): they answer
	// the country before Close and unknown after.
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 2000 {
				if c, ok := g.Country(addr); ok && c != "GB" {
					t.Errorf("Country = %q", c)
					return
				}
			}
		})
	}
	time.Sleep(time.Millisecond)
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()

	if c, ok := g.Country(addr); ok || c != "" {
		t.Fatalf("Country after Close = %q, %v; want unknown", c, ok)
	}
	if err := g.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if g.DatabaseType() != "" || !g.BuildTime().IsZero() {
		t.Fatal("metadata still reported after Close")
	}
}

// TestGeoIPWithSet wires the two halves together the way client authentication will:
// resolve the country, then check it.
func TestGeoIPWithSet(t *testing.T) {
	g, err := rules.OpenGeoIP(writeDB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	set, err := rules.Compile([]rules.Rule{
		{ID: "w", Type: rules.TypeCountry, Action: rules.ActionWhitelist, Value: "gb", Enabled: true},
		{ID: "w2", Type: rules.TypeCountry, Action: rules.ActionWhitelist, Value: "DE", Enabled: true},
	}, rules.Options{CountryAvailable: true})
	if err != nil {
		t.Fatal(err)
	}
	for ip, allowed := range map[string]bool{
		"81.2.69.1":    true,
		"2001:db8::1":  true,
		"81.2.69.170":  false, // IE
		"8.8.8.8":      false, // unknown fails a whitelist
		"203.0.113.1":  false, // XK: unknown
		"198.51.100.1": false, // no country
	} {
		a := netip.MustParseAddr(ip)
		c, _ := g.Country(a)
		if d := set.Check(rules.Subject{IP: a, Country: c}); d.Allowed != allowed {
			t.Errorf("%s (country %q): Check = %+v, want allowed=%v", ip, c, d, allowed)
		}
	}
}

func BenchmarkGeoIPCountry(b *testing.B) {
	path := filepath.Join(b.TempDir(), "GeoLite2-Country.mmdb")
	geoiptest.Write(b, path, testEntries)
	g, err := rules.OpenGeoIP(path)
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	addr := netip.MustParseAddr("81.2.69.1")
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := g.Country(addr); !ok {
			b.Fatal("miss")
		}
	}
}
