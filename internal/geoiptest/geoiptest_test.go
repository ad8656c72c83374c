package geoiptest_test

import (
	"net/netip"
	"path/filepath"
	"testing"

	"github.com/oschwald/maxminddb-golang/v2"

	"github.com/keyward/keyward/internal/geoiptest"
)

// TestWrite reads the written file back with the MaxMind reader, raw, so tests built on
// the helper know exactly what the database holds: codes stored as given, a record with
// no country for "", more specific networks winning over the ones they sit in, and IPv4
// reachable through its mapped form.
func TestWrite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "test.mmdb")
	geoiptest.Write(t, path, map[string]string{
		"10.0.0.0/8":      "DE",
		"10.1.0.0/16":     "fr",
		"192.0.2.0/24":    "",
		"2001:db8::/32":   "XK",
		"2001:db8:1::/48": "JP",
	})
	db, err := maxminddb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Verify(); err != nil {
		t.Fatalf("written database does not verify: %v", err)
	}
	if db.Metadata.DatabaseType != "GeoLite2-Country" || db.Metadata.IPVersion != 6 {
		t.Fatalf("metadata %+v", db.Metadata)
	}

	type record struct {
		Country *struct {
			ISOCode string `maxminddb:"iso_code"`
		} `maxminddb:"country"`
	}
	tests := []struct {
		ip         string
		found      bool
		hasCountry bool
		code       string
	}{
		{"10.0.0.1", true, true, "DE"},
		{"10.1.2.3", true, true, "fr"},
		{"10.2.0.0", true, true, "DE"},
		{"::ffff:10.1.2.3", true, true, "fr"},
		{"192.0.2.1", true, false, ""},
		{"2001:db8::1", true, true, "XK"},
		{"2001:db8:1::1", true, true, "JP"},
		{"11.0.0.1", false, false, ""},
		{"2001:db9::1", false, false, ""},
	}
	for _, tc := range tests {
		res := db.Lookup(netip.MustParseAddr(tc.ip))
		if res.Err() != nil {
			t.Fatalf("%s: %v", tc.ip, res.Err())
		}
		if res.Found() != tc.found {
			t.Errorf("%s: found = %v, want %v", tc.ip, res.Found(), tc.found)
			continue
		}
		var rec record
		if err := res.Decode(&rec); err != nil {
			t.Fatalf("%s: %v", tc.ip, err)
		}
		if (rec.Country != nil) != tc.hasCountry || (rec.Country != nil && rec.Country.ISOCode != tc.code) {
			t.Errorf("%s: country %+v, want present=%v code %q", tc.ip, rec.Country, tc.hasCountry, tc.code)
		}
	}
}

func TestWriteType(t *testing.T) {
	path := filepath.Join(t.TempDir(), "city.mmdb")
	geoiptest.WriteType(t, path, "GeoLite2-City", map[string]string{"10.0.0.0/8": "DE"})
	db, err := maxminddb.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if db.Metadata.DatabaseType != "GeoLite2-City" {
		t.Fatalf("database type %q", db.Metadata.DatabaseType)
	}
}
