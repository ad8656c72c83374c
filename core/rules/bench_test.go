package rules_test

import (
	"fmt"
	"math/rand/v2"
	"net/netip"
	"testing"

	"github.com/keyward/keyward/core/rules"
)

// benchSet is a large owner's rule list: 1,000 ip rules (CIDRs of mixed sizes, both
// families; 950 blacklist, 50 whitelist), 100 hwid rules (90/10) and 50 country rules
// (40/10), plus subjects that take each path through Check.
type benchSet struct {
	rules    []rules.Rule
	allowed4 rules.Subject // passes every blacklist and every whitelist: the longest path
	allowed6 rules.Subject
	blackIP  rules.Subject
	mixed    []rules.Subject
}

func newBenchSet(tb testing.TB) benchSet {
	rng := rand.New(rand.NewPCG(1, 2))
	randAddr4 := func() netip.Addr {
		var b [4]byte
		for i := range b {
			b[i] = byte(rng.UintN(256))
		}
		return netip.AddrFrom4(b)
	}
	randAddr6 := func() netip.Addr {
		var b [16]byte
		b[0], b[1] = 0x20, 0x01
		for i := 2; i < 16; i++ {
			b[i] = byte(rng.UintN(256))
		}
		return netip.AddrFrom16(b)
	}
	// Mostly single hosts and common network sizes, as owners' lists are.
	bits4 := []int{32, 32, 32, 32, 32, 31, 30, 29, 28, 27, 26, 25, 24, 24, 24, 22, 20, 16}
	bits6 := []int{128, 128, 64, 64, 56, 48, 40, 32}
	randPrefix := func() netip.Prefix {
		if rng.UintN(5) == 0 {
			return netip.PrefixFrom(randAddr6(), bits6[rng.UintN(uint(len(bits6)))]).Masked()
		}
		return netip.PrefixFrom(randAddr4(), bits4[rng.UintN(uint(len(bits4)))]).Masked()
	}
	randHWID := func() string {
		const hex = "0123456789ABCDEF"
		b := make([]byte, 32)
		for i := range b {
			b[i] = hex[rng.UintN(16)]
		}
		return string(b)
	}
	var countries []string
	for a := 'A'; a <= 'Z'; a++ {
		for b := 'A'; b <= 'Z'; b++ {
			if c := string([]rune{a, b}); rules.IsAssignedCountry(c) {
				countries = append(countries, c)
			}
		}
	}
	rng.Shuffle(len(countries), func(i, j int) { countries[i], countries[j] = countries[j], countries[i] })

	var bs benchSet
	add := func(typ, action, value string) {
		bs.rules = append(bs.rules, rules.Rule{ID: fmt.Sprint(len(bs.rules)), Type: typ, Action: action, Value: value, Enabled: true})
	}

	var white []netip.Prefix
	for range 50 {
		p := randPrefix()
		white = append(white, p)
		add(rules.TypeIP, rules.ActionWhitelist, p.String())
	}
	var white4, white6 netip.Prefix
	for _, p := range white {
		if p.Addr().Is4() && !white4.IsValid() {
			white4 = p
		}
		if p.Addr().Is6() && !white6.IsValid() {
			white6 = p
		}
	}
	bs.allowed4.IP, bs.allowed6.IP = white4.Addr(), white6.Addr()
	var black4 netip.Prefix
	for n := 0; n < 950; {
		p := randPrefix()
		if p.Contains(bs.allowed4.IP) || p.Contains(bs.allowed6.IP) {
			continue
		}
		if p.Addr().Is4() && !black4.IsValid() {
			black4 = p
		}
		add(rules.TypeIP, rules.ActionBlacklist, p.String())
		n++
	}
	var whiteHWID string
	for i := range 100 {
		h := randHWID()
		if i < 10 {
			add(rules.TypeHWID, rules.ActionWhitelist, h)
			whiteHWID = h
		} else {
			add(rules.TypeHWID, rules.ActionBlacklist, h)
		}
	}
	for i, c := range countries[:50] {
		if i < 10 {
			add(rules.TypeCountry, rules.ActionWhitelist, c)
		} else {
			add(rules.TypeCountry, rules.ActionBlacklist, c)
		}
	}
	bs.allowed4.HWID, bs.allowed4.Country = whiteHWID, countries[0]
	bs.allowed6.HWID, bs.allowed6.Country = whiteHWID, countries[0]
	bs.blackIP = bs.allowed4
	bs.blackIP.IP = black4.Addr()

	for range 1024 {
		s := rules.Subject{HWID: randHWID(), Country: countries[rng.UintN(uint(len(countries)))]}
		if rng.UintN(5) == 0 {
			s.IP = randAddr6()
		} else {
			s.IP = randAddr4()
		}
		bs.mixed = append(bs.mixed, s)
	}
	if len(bs.rules) != 1150 {
		tb.Fatalf("built %d rules, want 1150", len(bs.rules))
	}
	return bs
}

// BenchmarkCheck measures Check on the 1,150-rule set. It reports ns/op and allocations
// only; there is deliberately no timing assertion (the machine is shared).
func BenchmarkCheck(b *testing.B) {
	bs := newBenchSet(b)
	set, err := rules.Compile(bs.rules, rules.Options{CountryAvailable: true})
	if err != nil {
		b.Fatal(err)
	}
	// Make sure each subject takes the path its name says, or the numbers mean nothing.
	for name, c := range map[string]struct {
		s    rules.Subject
		want rules.Decision
	}{
		"allowed4": {bs.allowed4, rules.Decision{Allowed: true}},
		"allowed6": {bs.allowed6, rules.Decision{Allowed: true}},
	} {
		if d := set.Check(c.s); d != c.want {
			b.Fatalf("%s: Check = %+v, want %+v", name, d, c.want)
		}
	}
	if d := set.Check(bs.blackIP); d.Allowed || d.Type != rules.TypeIP || d.Reason != rules.ReasonBlacklisted {
		b.Fatalf("blackIP: Check = %+v", d)
	}

	run := func(name string, subjects []rules.Subject) {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			var sink bool
			i := 0
			for b.Loop() {
				sink = set.Check(subjects[i%len(subjects)]).Allowed != sink
				i++
			}
		})
	}
	run("allowed_ipv4_full_path", []rules.Subject{bs.allowed4})
	run("allowed_ipv6_full_path", []rules.Subject{bs.allowed6})
	run("blacklisted_ip", []rules.Subject{bs.blackIP})
	run("random_subjects", bs.mixed)
}

// BenchmarkCompile measures rebuilding the 1,150-rule set, which happens whenever an
// owner changes a rule.
func BenchmarkCompile(b *testing.B) {
	bs := newBenchSet(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := rules.Compile(bs.rules, rules.Options{CountryAvailable: true}); err != nil {
			b.Fatal(err)
		}
	}
}
