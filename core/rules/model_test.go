package rules_test

import (
	"math/rand/v2"
	"net/netip"
	"strings"
	"testing"

	"github.com/keyward/keyward/core/rules"
)

// modelCheck is the documented contract written as plainly as possible: a linear scan with
// netip.Prefix.Contains and string comparisons. TestCheckAgainstModel holds the compiled
// Set to it on random rule sets, so the fast lookup structures cannot drift from the
// documented semantics (prefix edges, first-listed blacklist rule, and so on).
func modelCheck(rs []rules.Rule, countryAvailable bool, in rules.Subject) rules.Decision {
	ip := in.IP.WithZone("").Unmap()
	hwid := strings.TrimSpace(in.HWID)
	country, countryKnown := rules.HeaderCountry(in.Country)

	type norm struct {
		r      *rules.Rule
		prefix netip.Prefix
	}
	var active []norm
	for i := range rs {
		r := &rs[i]
		if !r.Enabled || (r.Type == rules.TypeCountry && !countryAvailable) {
			continue
		}
		v, err := rules.Validate(r.Type, r.Action, r.Value)
		if err != nil {
			panic(err)
		}
		n := norm{r: r}
		if r.Type == rules.TypeIP {
			if strings.Contains(v, "/") {
				n.prefix = netip.MustParsePrefix(v)
			} else {
				a := netip.MustParseAddr(v)
				n.prefix = netip.PrefixFrom(a, a.BitLen())
			}
		}
		r2 := *r
		r2.Value = v
		n.r = &r2
		active = append(active, n)
	}
	matches := func(n norm) bool {
		switch n.r.Type {
		case rules.TypeIP:
			return ip.IsValid() && n.prefix.Contains(ip)
		case rules.TypeHWID:
			return hwid != "" && hwid == n.r.Value
		default:
			return countryKnown && strings.EqualFold(country, n.r.Value)
		}
	}
	types := []string{rules.TypeIP, rules.TypeHWID, rules.TypeCountry}
	for _, typ := range types {
		for _, n := range active {
			if n.r.Type == typ && n.r.Action == rules.ActionBlacklist && matches(n) {
				return rules.Decision{Type: typ, Reason: rules.ReasonBlacklisted, Rule: n.r}
			}
		}
	}
	for _, typ := range types {
		have, met := false, false
		for _, n := range active {
			if n.r.Type == typ && n.r.Action == rules.ActionWhitelist {
				have = true
				met = met || matches(n)
			}
		}
		if have && !met {
			return rules.Decision{Type: typ, Reason: rules.ReasonNotWhitelisted}
		}
	}
	return rules.Decision{Allowed: true}
}

func TestCheckAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	// A small address space and vocabulary so that rules and subjects collide often.
	bases := []netip.Addr{
		netip.MustParseAddr("10.0.0.0"), netip.MustParseAddr("10.128.255.255"),
		netip.MustParseAddr("192.0.2.128"), netip.MustParseAddr("0.0.0.0"),
		netip.MustParseAddr("255.255.255.255"),
		netip.MustParseAddr("2001:db8::"), netip.MustParseAddr("2001:db8:0:1:ffff:ffff:ffff:ffff"),
		netip.MustParseAddr("::"), netip.MustParseAddr("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"),
	}
	jitter := func(a netip.Addr) netip.Addr {
		b := a.As16()
		for range rng.IntN(3) {
			i := rng.IntN(16)
			if a.Is4() {
				i = 12 + rng.IntN(4)
			}
			b[i] ^= 1 << rng.IntN(8)
		}
		n := netip.AddrFrom16(b)
		if a.Is4() {
			n = n.Unmap()
		}
		return n
	}
	randAddr := func() netip.Addr { return jitter(bases[rng.IntN(len(bases))]) }
	hwids := []string{"a", "A", "b", "dev-1", "dev-2"}
	countries := []string{"DE", "fr", "US", "jp"}

	randRule := func() rules.Rule {
		r := rules.Rule{Action: rules.ActionBlacklist, Enabled: rng.IntN(5) != 0}
		if rng.IntN(3) == 0 {
			r.Action = rules.ActionWhitelist
		}
		switch rng.IntN(3) {
		case 0:
			r.Type = rules.TypeIP
			a := randAddr()
			bits := rng.IntN(a.BitLen() + 1)
			if rng.IntN(3) == 0 {
				bits = a.BitLen() - rng.IntN(3)
			}
			r.Value = netip.PrefixFrom(a, bits).String() // unmasked on purpose
			if a.Is4() && rng.IntN(4) == 0 {
				r.Value = netip.PrefixFrom(netip.AddrFrom16(a.As16()), bits+96).String() // mapped form
			}
		case 1:
			r.Type, r.Value = rules.TypeHWID, hwids[rng.IntN(len(hwids))]
		default:
			r.Type, r.Value = rules.TypeCountry, countries[rng.IntN(len(countries))]
		}
		return r
	}
	randSubject := func() rules.Subject {
		var s rules.Subject
		if rng.IntN(6) != 0 {
			s.IP = randAddr()
			if s.IP.Is4() && rng.IntN(3) == 0 {
				s.IP = netip.AddrFrom16(s.IP.As16()) // v4-mapped
			}
		}
		if rng.IntN(6) != 0 {
			s.HWID = hwids[rng.IntN(len(hwids))]
		}
		if rng.IntN(6) != 0 {
			s.Country = append(countries, "XX", "de")[rng.IntN(len(countries)+2)]
		}
		return s
	}

	checked, refused := 0, 0
	outcomes := map[string]int{}
	for set := range 400 {
		rs := make([]rules.Rule, rng.IntN(12))
		for i := range rs {
			rs[i] = randRule()
			rs[i].ID = string(rune('a' + i))
		}
		countryAvailable := set%4 != 0
		compiled, err := rules.Compile(rs, rules.Options{CountryAvailable: countryAvailable})
		if err != nil {
			t.Fatal(err)
		}
		for range 50 {
			s := randSubject()
			got, want := compiled.Check(s), modelCheck(rs, countryAvailable, s)
			same := got.Allowed == want.Allowed && got.Type == want.Type && got.Reason == want.Reason &&
				(got.Rule == nil) == (want.Rule == nil) && (got.Rule == nil || *got.Rule == *want.Rule)
			if !same {
				t.Fatalf("rules %+v (countryAvailable=%v)\nsubject %+v\nCheck = %+v rule %+v\nmodel = %+v rule %+v",
					rs, countryAvailable, s, got, got.Rule, want, want.Rule)
			}
			checked++
			if !got.Allowed {
				refused++
			}
			outcomes[got.Type+" "+got.Reason]++
		}
	}
	// Both outcomes must be well represented, or the comparison proves little.
	if refused < checked/5 || refused > checked*4/5 {
		t.Fatalf("%d of %d checks refused; the generator is lopsided", refused, checked)
	}
	for _, typ := range []string{rules.TypeIP, rules.TypeHWID, rules.TypeCountry} {
		for _, reason := range []string{rules.ReasonBlacklisted, rules.ReasonNotWhitelisted} {
			if n := outcomes[typ+" "+reason]; n < 100 {
				t.Errorf("only %d checks refused with %s %s; the generator misses a path", n, typ, reason)
			}
		}
	}
	t.Logf("%d checks, %d refused: %v", checked, refused, outcomes)
}
