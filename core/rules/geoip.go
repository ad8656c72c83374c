package rules

import (
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"time"

	"github.com/oschwald/maxminddb-golang/v2"
)

// CountryResolver resolves a client's address to an assigned ISO 3166-1 alpha-2 code in
// upper case. It returns "" and false when the country is unknown: an invalid address, an
// address the source has no country for, or a failed lookup. Implementations are safe for
// concurrent use.
type CountryResolver interface {
	Country(ip netip.Addr) (string, bool)
}

// GeoIP resolves countries from a MaxMind-format database (GeoLite2-Country,
// GeoLite2-City, their GeoIP2 counterparts, or another database with the same
// country.iso_code layout). It is safe for concurrent use, Close included.
type GeoIP struct {
	// mu guards db against Close: the reader memory-maps the file, and a lookup running
	// while Close unmaps it would read freed memory.
	mu sync.RWMutex
	db *maxminddb.Reader
}

var _ CountryResolver = (*GeoIP)(nil)

// OpenGeoIP opens and verifies the database at path. Verification walks the whole file
// once, which costs a moment at start-up but means a truncated or corrupt download fails
// here, clearly, instead of as wrong or missing countries later. A database that holds no
// country data (an ASN database, for instance) is refused too: with it every client's
// country would be unknown and a country whitelist would lock everybody out.
func OpenGeoIP(path string) (*GeoIP, error) {
	db, err := maxminddb.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open GeoIP database %s: %w", path, err)
	}
	if err := db.Verify(); err != nil {
		_ = db.Close()
		return nil, fmt.Errorf("open GeoIP database %s: corrupt database: %w", path, err)
	}
	if !hasCountryData(db.Metadata.DatabaseType) {
		_ = db.Close()
		return nil, fmt.Errorf("open GeoIP database %s: database type %q has no country data; use a GeoLite2-Country or GeoLite2-City database",
			path, db.Metadata.DatabaseType)
	}
	return &GeoIP{db: db}, nil
}

// hasCountryData tells from a database type whether records carry country.iso_code.
// MaxMind's own names (GeoLite2-Country, GeoIP2-City, GeoIP2-Enterprise) and compatible
// third-party ones (DBIP-Country-Lite, …) all say so in the type.
func hasCountryData(dbType string) bool {
	t := strings.ToLower(dbType)
	return strings.Contains(t, "country") || strings.Contains(t, "city") || strings.Contains(t, "enterprise")
}

// Country looks ip up and returns its country's code. Addresses the database has no
// country for (private ranges, anycast networks MaxMind only gives a registered country,
// IPv6 in an IPv4-only database), lookups after Close, and codes that are not assigned
// ISO codes all answer unknown. Registered country is deliberately not used as a fallback:
// it names where a network is registered, not where the client is.
func (g *GeoIP) Country(ip netip.Addr) (string, bool) {
	if !ip.IsValid() {
		return "", false
	}
	ip = ip.WithZone("").Unmap()
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.db == nil {
		return "", false
	}
	// Only country.iso_code is decoded; a missing path leaves code empty, which is unknown.
	var code string
	if err := g.db.Lookup(ip).DecodePath(&code, "country", "iso_code"); err != nil {
		return "", false
	}
	i, ok := assignedSlot(code)
	if !ok {
		return "", false
	}
	return assigned[i], true
}

// DatabaseType is the database's type from its metadata (GeoLite2-Country, …), for logs.
func (g *GeoIP) DatabaseType() string {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.db == nil {
		return ""
	}
	return g.db.Metadata.DatabaseType
}

// BuildTime is when the database was built, so the server can warn about a stale one
// (MaxMind publishes updates weekly).
func (g *GeoIP) BuildTime() time.Time {
	g.mu.RLock()
	defer g.mu.RUnlock()
	if g.db == nil {
		return time.Time{}
	}
	return g.db.Metadata.BuildTime()
}

// Close releases the database. Lookups after Close answer unknown; closing twice is
// harmless.
func (g *GeoIP) Close() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.db == nil {
		return nil
	}
	err := g.db.Close()
	g.db = nil
	if err != nil {
		return fmt.Errorf("close GeoIP database: %w", err)
	}
	return nil
}
