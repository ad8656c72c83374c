package rules

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"net/netip"
	"slices"
	"strings"
)

// Rule is one allow/deny rule as stored (SPEC 2 "Rule"); the note is not needed to
// enforce it and is left out.
type Rule struct {
	// ID is opaque here; it rides along to Decision.Rule so the caller can name the rule
	// that fired (the rule.triggered event).
	ID      string
	Type    string
	Action  string
	Value   string
	Enabled bool
}

// Options are the facts about the deployment that change how rules apply.
type Options struct {
	// CountryAvailable says a country resolver is configured (a GeoIP database or a
	// trusted proxy's country header). Without one every client's country would be
	// unknown and a single country whitelist would lock everybody out, so country rules
	// are then ignored entirely instead.
	CountryAvailable bool
}

// Subject is what is known about a client being authenticated. Zero values mean unknown.
type Subject struct {
	// IP is the client's address; the zero Addr means unknown. IPv4-mapped IPv6
	// addresses are treated as the IPv4 address and zones are ignored.
	IP netip.Addr
	// HWID is the hardware id the client sent, "" when none was sent. Surrounding white
	// space is ignored, as it is in rule values.
	HWID string
	// Country is the resolved ISO 3166-1 alpha-2 code in either case; "" or a code that
	// is not assigned (XX, T1, …) means unknown.
	Country string
}

// Reasons a Decision refuses a subject.
const (
	// ReasonBlacklisted: an enabled blacklist rule matched; Decision.Rule is that rule.
	ReasonBlacklisted = "blacklisted"
	// ReasonNotWhitelisted: enabled whitelist rules of Decision.Type exist and the
	// subject's value of that type matched none of them, or was unknown.
	ReasonNotWhitelisted = "not_whitelisted"
)

// Decision is the outcome of Check.
type Decision struct {
	Allowed bool
	// Type is the rule type that refused the subject ("ip", "hwid", "country"); "" when
	// allowed.
	Type string
	// Reason is ReasonBlacklisted or ReasonNotWhitelisted; "" when allowed.
	Reason string
	// Rule is the blacklist rule that matched, for ReasonBlacklisted only: no single rule
	// is at fault when a whitelist is not met. It points into the Set (Value in canonical
	// form) and must not be modified.
	Rule *Rule
}

// Set is a compiled, immutable rule set; it is safe for concurrent use. The nil *Set holds
// no rules and allows everything.
type Set struct {
	// rules holds the enabled rules in effect, in input order, values canonical; the
	// lookup structures below refer to them by index.
	rules []Rule

	ipBlack, ipWhite prefixTable

	hwidBlack map[string]int
	hwidWhite map[string]struct{}

	countryActive   bool
	countryBlack    [countrySlots]int32 // index+1 of the first rule for the code; 0 = none
	countryWhite    [countrySlots]bool
	hasCountryWhite bool
}

// Compile validates and compiles rules for Check. Disabled rules are skipped without being
// looked at. Every enabled rule is validated (see Validate) and its value normalised; the
// first invalid one fails the whole compilation, because enforcing part of an owner's rules
// would silently open what they meant to close. Enabled country rules are validated but
// dropped when opts.CountryAvailable is false.
func Compile(rules []Rule, opts Options) (*Set, error) {
	s := &Set{
		hwidBlack: map[string]int{},
		hwidWhite: map[string]struct{}{},
	}
	for i, r := range rules {
		if !r.Enabled {
			continue
		}
		v, err := Validate(r.Type, r.Action, r.Value)
		if err != nil {
			return nil, fmt.Errorf("compile rule %d (id %q): %w", i, r.ID, err)
		}
		if r.Type == TypeCountry && !opts.CountryAvailable {
			continue
		}
		r.Value = v
		idx := len(s.rules)
		s.rules = append(s.rules, r)
		black := r.Action == ActionBlacklist
		switch r.Type {
		case TypeIP:
			// Validate succeeded, so the value parses; the error cannot happen.
			p, _ := parseIPValue(v)
			if black {
				s.ipBlack.add(p, idx)
			} else {
				s.ipWhite.add(p, idx)
			}
		case TypeHWID:
			if black {
				if _, dup := s.hwidBlack[v]; !dup {
					s.hwidBlack[v] = idx
				}
			} else {
				s.hwidWhite[v] = struct{}{}
			}
		case TypeCountry:
			s.countryActive = true
			slot, _ := assignedSlot(v)
			if black {
				if s.countryBlack[slot] == 0 {
					s.countryBlack[slot] = int32(idx + 1)
				}
			} else {
				s.countryWhite[slot] = true
				s.hasCountryWhite = true
			}
		}
	}
	return s, nil
}

// CountryRulesActive reports whether Check consults the subject's country: a country
// resolver is available and at least one enabled country rule exists. When it is false
// the caller can skip resolving the country altogether.
func (s *Set) CountryRulesActive() bool {
	return s != nil && s.countryActive
}

// Len is the number of rules in effect: enabled ones, less country rules while country
// rules are inactive.
func (s *Set) Len() int {
	if s == nil {
		return 0
	}
	return len(s.rules)
}

// Check decides whether a subject may authenticate; see the package documentation for the
// semantics. Blacklists are checked before whitelists, each in the order ip, hwid,
// country, so a subject refused on several grounds gets the same Decision every time; of
// several matching blacklist rules of one type the one listed first is reported.
func (s *Set) Check(in Subject) Decision {
	if s == nil {
		return Decision{Allowed: true}
	}
	ip := in.IP
	if ip.IsValid() {
		// Rules hold IPv4 in its plain form, so a mapped address is unmapped, or
		// ::ffff:a.b.c.d would step around an IPv4 blacklist; a zone names a local
		// interface and says nothing about the client.
		ip = ip.WithZone("").Unmap()
	}
	hwid := strings.TrimSpace(in.HWID)
	country, countryKnown := assignedSlot(strings.TrimSpace(in.Country))

	if ip.IsValid() {
		if i, ok := s.ipBlack.firstMatch(ip); ok {
			return s.deny(TypeIP, i)
		}
	}
	if hwid != "" {
		if i, ok := s.hwidBlack[hwid]; ok {
			return s.deny(TypeHWID, i)
		}
	}
	if s.countryActive && countryKnown {
		if i := s.countryBlack[country]; i != 0 {
			return s.deny(TypeCountry, int(i-1))
		}
	}

	if !s.ipWhite.empty() && (!ip.IsValid() || !s.ipWhite.contains(ip)) {
		return Decision{Type: TypeIP, Reason: ReasonNotWhitelisted}
	}
	if len(s.hwidWhite) > 0 {
		if _, ok := s.hwidWhite[hwid]; hwid == "" || !ok {
			return Decision{Type: TypeHWID, Reason: ReasonNotWhitelisted}
		}
	}
	if s.countryActive && s.hasCountryWhite && (!countryKnown || !s.countryWhite[country]) {
		return Decision{Type: TypeCountry, Reason: ReasonNotWhitelisted}
	}
	return Decision{Allowed: true}
}

func (s *Set) deny(typ string, i int) Decision {
	return Decision{Type: typ, Reason: ReasonBlacklisted, Rule: &s.rules[i]}
}

// prefixTable finds the rules whose prefix contains an address. Prefixes are grouped by
// length: an address is masked once per distinct length present and looked up in that
// length's map, so a check costs one map lookup per distinct length however many rules
// there are (owners' lists are mostly single hosts and a handful of network sizes),
// instead of a scan of every rule. Keys are plain integers, which the runtime hashes
// several times faster than a netip.Prefix.
type prefixTable struct {
	v4 []group[uint32] // masked address
	// IPv6 prefixes up to /64 need only the high half of the address.
	v6short []group[uint64]    // masked high half
	v6long  []group[[2]uint64] // high half and masked low half
}

// group maps the masked networks of one prefix length to the index of the first rule
// holding each. Groups are kept longest first.
type group[K comparable] struct {
	bits int
	m    map[K]int
}

// addTo records key for rule idx in the group of length bits; a network already present
// keeps its first rule.
func addTo[K comparable](gs *[]group[K], bits int, key K, idx int) {
	i, found := slices.BinarySearchFunc(*gs, bits, func(g group[K], bits int) int {
		return cmp.Compare(bits, g.bits) // descending
	})
	if !found {
		*gs = slices.Insert(*gs, i, group[K]{bits: bits, m: map[K]int{}})
	}
	if _, dup := (*gs)[i].m[key]; !dup {
		(*gs)[i].m[key] = idx
	}
}

// Masks for a prefix length. Go defines a shift by the full width or more as 0, so /0
// needs no special case.
func mask32(bits int) uint32 { return ^uint32(0) << (32 - bits) }
func mask64(bits int) uint64 { return ^uint64(0) << (64 - bits) }

func halves(a netip.Addr) (hi, lo uint64) {
	b := a.As16()
	return binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
}

// add records the canonical prefix p (masked, IPv4 unmapped) for rule idx.
func (t *prefixTable) add(p netip.Prefix, idx int) {
	a, bits := p.Addr(), p.Bits()
	switch {
	case a.Is4():
		b := a.As4()
		addTo(&t.v4, bits, binary.BigEndian.Uint32(b[:]), idx)
	case bits <= 64:
		hi, _ := halves(a)
		addTo(&t.v6short, bits, hi, idx)
	default:
		hi, lo := halves(a)
		addTo(&t.v6long, bits, [2]uint64{hi, lo}, idx)
	}
}

func (t *prefixTable) empty() bool {
	return len(t.v4) == 0 && len(t.v6short) == 0 && len(t.v6long) == 0
}

// lookup calls found with the rule index of every prefix containing a (unmapped,
// zoneless), longest prefix first, until found returns false.
func (t *prefixTable) lookup(a netip.Addr, found func(idx int) bool) {
	if a.Is4() {
		b := a.As4()
		v := binary.BigEndian.Uint32(b[:])
		for _, g := range t.v4 {
			if i, ok := g.m[v&mask32(g.bits)]; ok && !found(i) {
				return
			}
		}
		return
	}
	hi, lo := halves(a)
	for _, g := range t.v6long {
		if i, ok := g.m[[2]uint64{hi, lo & mask64(g.bits-64)}]; ok && !found(i) {
			return
		}
	}
	for _, g := range t.v6short {
		if i, ok := g.m[hi&mask64(g.bits)]; ok && !found(i) {
			return
		}
	}
}

// contains reports whether any prefix contains a.
func (t *prefixTable) contains(a netip.Addr) bool {
	hit := false
	t.lookup(a, func(int) bool { hit = true; return false })
	return hit
}

// firstMatch returns the lowest rule index among the prefixes containing a.
func (t *prefixTable) firstMatch(a netip.Addr) (int, bool) {
	best, found := 0, false
	t.lookup(a, func(i int) bool {
		if !found || i < best {
			best, found = i, true
		}
		return true
	})
	return best, found
}
