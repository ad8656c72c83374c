package rules_test

import (
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/rules"
)

// base is a subject whose every value is known and matches none of the rules used in the
// combination test, so each case changes exactly one value.
var base = rules.Subject{
	IP:      netip.MustParseAddr("192.0.2.1"),
	HWID:    "base-hwid",
	Country: "US",
}

// fixture gives, for one rule type, a rule value and subjects whose value of that type
// matches it, does not match it, or is unknown.
type fixture struct {
	typ, ruleValue          string
	match, noMatch, unknown rules.Subject
	wantCanonicalRuleValue  string
}

func with(f func(*rules.Subject)) rules.Subject {
	s := base
	f(&s)
	return s
}

var fixtures = []fixture{
	{
		typ: rules.TypeIP, ruleValue: "203.0.113.0/24", wantCanonicalRuleValue: "203.0.113.0/24",
		match:   with(func(s *rules.Subject) { s.IP = netip.MustParseAddr("203.0.113.77") }),
		noMatch: with(func(s *rules.Subject) { s.IP = netip.MustParseAddr("203.0.114.1") }),
		unknown: with(func(s *rules.Subject) { s.IP = netip.Addr{} }),
	},
	{
		typ: rules.TypeHWID, ruleValue: "HWID-Abc-1", wantCanonicalRuleValue: "HWID-Abc-1",
		match: with(func(s *rules.Subject) { s.HWID = "HWID-Abc-1" }),
		// Differs in case only: hwid comparison is exact.
		noMatch: with(func(s *rules.Subject) { s.HWID = "hwid-abc-1" }),
		unknown: with(func(s *rules.Subject) { s.HWID = "" }),
	},
	{
		typ: rules.TypeCountry, ruleValue: "de", wantCanonicalRuleValue: "DE",
		// Differs in case from the rule: country comparison is case-insensitive.
		match:   with(func(s *rules.Subject) { s.Country = "De" }),
		noMatch: with(func(s *rules.Subject) { s.Country = "FR" }),
		unknown: with(func(s *rules.Subject) { s.Country = "" }),
	},
}

// TestCheckEveryCombination covers each type × action × {match, no match, unknown} ×
// {enabled, disabled}, with a country resolver available, and then the country rules
// again without one (inactive: everything allowed).
func TestCheckEveryCombination(t *testing.T) {
	// The outcome depends on action, enabled and subject kind only, never on the type;
	// that independence is part of the contract.
	outcomes := []struct {
		action  string
		enabled bool
		kind    string // match, no match, unknown
		allowed bool
		reason  string
	}{
		{rules.ActionBlacklist, true, "match", false, rules.ReasonBlacklisted},
		{rules.ActionBlacklist, true, "no match", true, ""},
		{rules.ActionBlacklist, true, "unknown", true, ""},
		{rules.ActionBlacklist, false, "match", true, ""},
		{rules.ActionBlacklist, false, "no match", true, ""},
		{rules.ActionBlacklist, false, "unknown", true, ""},
		{rules.ActionWhitelist, true, "match", true, ""},
		{rules.ActionWhitelist, true, "no match", false, rules.ReasonNotWhitelisted},
		{rules.ActionWhitelist, true, "unknown", false, rules.ReasonNotWhitelisted},
		{rules.ActionWhitelist, false, "match", true, ""},
		{rules.ActionWhitelist, false, "no match", true, ""},
		{rules.ActionWhitelist, false, "unknown", true, ""},
	}
	ran := 0
	for _, countryAvailable := range []bool{true, false} {
		for _, fx := range fixtures {
			if !countryAvailable && fx.typ != rules.TypeCountry {
				continue
			}
			for _, o := range outcomes {
				name := fmt.Sprintf("%s/%s/enabled=%v/%s/countryAvailable=%v", fx.typ, o.action, o.enabled, o.kind, countryAvailable)
				t.Run(name, func(t *testing.T) {
					ran++
					rule := rules.Rule{ID: "r1", Type: fx.typ, Action: o.action, Value: fx.ruleValue, Enabled: o.enabled}
					set, err := rules.Compile([]rules.Rule{rule}, rules.Options{CountryAvailable: countryAvailable})
					if err != nil {
						t.Fatal(err)
					}
					subject := map[string]rules.Subject{"match": fx.match, "no match": fx.noMatch, "unknown": fx.unknown}[o.kind]

					wantAllowed, wantReason := o.allowed, o.reason
					if fx.typ == rules.TypeCountry && !countryAvailable {
						wantAllowed, wantReason = true, "" // country rules inactive
					}
					wantActive := fx.typ == rules.TypeCountry && countryAvailable && o.enabled
					if got := set.CountryRulesActive(); got != wantActive {
						t.Errorf("CountryRulesActive = %v, want %v", got, wantActive)
					}

					d := set.Check(subject)
					if d.Allowed != wantAllowed || d.Reason != wantReason {
						t.Fatalf("Check(%+v) = %+v, want allowed=%v reason=%q", subject, d, wantAllowed, wantReason)
					}
					if wantAllowed {
						if d.Type != "" || d.Rule != nil {
							t.Fatalf("allowed decision carries type %q rule %v", d.Type, d.Rule)
						}
						return
					}
					if d.Type != fx.typ {
						t.Fatalf("decision type %q, want %q", d.Type, fx.typ)
					}
					if wantReason == rules.ReasonBlacklisted {
						if d.Rule == nil || d.Rule.ID != "r1" || d.Rule.Value != fx.wantCanonicalRuleValue || d.Rule.Action != rules.ActionBlacklist {
							t.Fatalf("decision rule %+v, want r1 with value %q", d.Rule, fx.wantCanonicalRuleValue)
						}
					} else if d.Rule != nil {
						t.Fatalf("not-whitelisted decision names rule %+v", d.Rule)
					}
				})
			}
		}
	}
	if want := 3*12 + 12; ran != want {
		t.Fatalf("ran %d combinations, want %d", ran, want)
	}
}

func ip(s string) netip.Addr { return netip.MustParseAddr(s) }

func TestCheckMixed(t *testing.T) {
	type check struct {
		subject rules.Subject
		allowed bool
		typ     string
		reason  string
		ruleID  string // for blacklisted
	}
	allow := func(s rules.Subject) check { return check{subject: s, allowed: true} }
	black := func(s rules.Subject, typ, id string) check {
		return check{subject: s, typ: typ, reason: rules.ReasonBlacklisted, ruleID: id}
	}
	notWhite := func(s rules.Subject, typ string) check {
		return check{subject: s, typ: typ, reason: rules.ReasonNotWhitelisted}
	}
	r := func(id, typ, action, value string) rules.Rule {
		return rules.Rule{ID: id, Type: typ, Action: action, Value: value, Enabled: true}
	}
	off := func(rule rules.Rule) rules.Rule { rule.Enabled = false; return rule }
	sIP := func(a string) rules.Subject { return rules.Subject{IP: ip(a)} }
	sHW := func(h string) rules.Subject { return rules.Subject{HWID: h} }
	sC := func(c string) rules.Subject { return rules.Subject{Country: c} }

	const (
		IP, HW, C = rules.TypeIP, rules.TypeHWID, rules.TypeCountry
		B, W      = rules.ActionBlacklist, rules.ActionWhitelist
	)
	tests := []struct {
		name      string
		rules     []rules.Rule
		noCountry bool // Options.CountryAvailable false
		checks    []check
	}{
		{name: "no rules", checks: []check{
			allow(rules.Subject{}),
			allow(rules.Subject{IP: ip("203.0.113.1"), HWID: "x", Country: "DE"}),
		}},
		{name: "blacklist and whitelist of the same type", rules: []rules.Rule{
			r("w", IP, W, "10.0.0.0/8"), r("b", IP, B, "10.1.0.0/16"),
		}, checks: []check{
			allow(sIP("10.2.3.4")),
			black(sIP("10.1.2.3"), IP, "b"),
			notWhite(sIP("11.0.0.1"), IP),
			notWhite(rules.Subject{}, IP),
		}},
		{name: "same value blacklisted and whitelisted: blacklist wins", rules: []rules.Rule{
			r("w", HW, W, "dev-1"), r("b", HW, B, "dev-1"), r("w2", HW, W, "dev-2"),
		}, checks: []check{
			black(sHW("dev-1"), HW, "b"),
			allow(sHW("dev-2")),
			notWhite(sHW("dev-3"), HW),
		}},
		{name: "country blacklist and whitelist", rules: []rules.Rule{
			r("w1", C, W, "DE"), r("w2", C, W, "fr"), r("b", C, B, "de"),
		}, checks: []check{
			black(sC("DE"), C, "b"),
			allow(sC("fr")),
			allow(sC("FR")),
			notWhite(sC("US"), C),
			notWhite(sC("XX"), C), // placeholder codes are unknown
			notWhite(sC(""), C),
		}},
		{name: "whitelist of one type does not affect others", rules: []rules.Rule{
			r("w", HW, W, "dev-1"),
		}, checks: []check{
			// No IP, no country, any IP: only the hwid counts.
			allow(rules.Subject{HWID: "dev-1"}),
			allow(rules.Subject{HWID: "dev-1", IP: ip("2001:db8::1"), Country: "JP"}),
			notWhite(rules.Subject{HWID: "dev-2", IP: ip("2001:db8::1"), Country: "JP"}, HW),
		}},
		{name: "ip whitelist ignores missing hwid and country", rules: []rules.Rule{
			r("w", IP, W, "198.51.100.0/24"),
		}, checks: []check{
			allow(sIP("198.51.100.9")),
			notWhite(rules.Subject{HWID: "dev", Country: "DE"}, IP),
		}},
		{name: "several whitelist entries, both families", rules: []rules.Rule{
			r("w1", IP, W, "1.1.1.1"), r("w2", IP, W, "2001:db8::/32"), r("w3", IP, W, "10.0.0.0/8"),
		}, checks: []check{
			allow(sIP("1.1.1.1")),
			allow(sIP("2001:db8:ffff::1")),
			allow(sIP("10.255.255.255")),
			notWhite(sIP("1.1.1.2"), IP),
			notWhite(sIP("2001:db9::1"), IP),
			notWhite(sIP("11.0.0.0"), IP),
		}},
		{name: "whitelists of several types must all be met", rules: []rules.Rule{
			r("wi", IP, W, "10.0.0.0/8"), r("wh", HW, W, "dev-1"), r("wc", C, W, "DE"),
		}, checks: []check{
			allow(rules.Subject{IP: ip("10.0.0.1"), HWID: "dev-1", Country: "DE"}),
			notWhite(rules.Subject{IP: ip("11.0.0.1"), HWID: "dev-1", Country: "DE"}, IP),
			notWhite(rules.Subject{IP: ip("10.0.0.1"), HWID: "dev-2", Country: "DE"}, HW),
			notWhite(rules.Subject{IP: ip("10.0.0.1"), HWID: "dev-1", Country: "FR"}, C),
			// Every whitelist failing: reported in the order ip, hwid, country.
			notWhite(rules.Subject{}, IP),
		}},
		{name: "blacklist of one type beats whitelist of another", rules: []rules.Rule{
			r("wi", IP, W, "10.0.0.0/8"), r("bh", HW, B, "stolen"),
		}, checks: []check{
			black(rules.Subject{IP: ip("10.0.0.1"), HWID: "stolen"}, HW, "bh"),
			// Blacklists are checked before whitelists.
			black(rules.Subject{IP: ip("11.0.0.1"), HWID: "stolen"}, HW, "bh"),
			allow(rules.Subject{IP: ip("10.0.0.1"), HWID: "fine"}),
		}},
		{name: "several blacklists matching: order ip, hwid, country", rules: []rules.Rule{
			r("bc", C, B, "RU"), r("bh", HW, B, "bad"), r("bi", IP, B, "203.0.113.0/24"),
		}, checks: []check{
			black(rules.Subject{IP: ip("203.0.113.5"), HWID: "bad", Country: "RU"}, IP, "bi"),
			black(rules.Subject{IP: ip("203.0.114.5"), HWID: "bad", Country: "RU"}, HW, "bh"),
			black(rules.Subject{HWID: "good", Country: "ru"}, C, "bc"),
		}},
		{name: "overlapping ip blacklists report the first listed", rules: []rules.Rule{
			r("wide", IP, B, "10.0.0.0/8"), r("narrow", IP, B, "10.1.2.3"), r("mid", IP, B, "10.1.0.0/16"),
		}, checks: []check{
			black(sIP("10.1.2.3"), IP, "wide"),
			black(sIP("10.9.9.9"), IP, "wide"),
		}},
		{name: "overlapping ip blacklists, narrow listed first", rules: []rules.Rule{
			r("narrow", IP, B, "10.1.2.3/32"), r("wide", IP, B, "10.0.0.0/8"),
		}, checks: []check{
			black(sIP("10.1.2.3"), IP, "narrow"),
			black(sIP("10.1.2.4"), IP, "wide"),
		}},
		{name: "duplicate rules report the first", rules: []rules.Rule{
			r("one", HW, B, "dup"), r("two", HW, B, " dup "), r("c1", C, B, "de"), r("c2", C, B, "DE"),
			r("i1", IP, B, "10.0.0.0/8"), r("i2", IP, B, "10.9.9.9/8"),
		}, checks: []check{
			black(sHW("dup"), HW, "one"),
			black(sC("DE"), C, "c1"),
			black(sIP("10.0.0.1"), IP, "i1"),
		}},
		{name: "disabled whitelist does not turn whitelisting on", rules: []rules.Rule{
			off(r("w", IP, W, "10.0.0.0/8")), off(r("wh", HW, W, "dev")), off(r("wc", C, W, "DE")),
		}, checks: []check{
			allow(sIP("11.0.0.1")),
			allow(rules.Subject{}),
		}},
		{name: "disabled entries of an active whitelist do not admit", rules: []rules.Rule{
			r("w1", IP, W, "10.0.0.0/8"), off(r("w2", IP, W, "11.0.0.0/8")),
		}, checks: []check{
			allow(sIP("10.0.0.1")),
			notWhite(sIP("11.0.0.1"), IP),
		}},
		{name: "disabled blacklist inside an active whitelist", rules: []rules.Rule{
			r("w", IP, W, "10.0.0.0/8"), off(r("b", IP, B, "10.1.0.0/16")),
		}, checks: []check{
			allow(sIP("10.1.0.1")),
		}},
		{name: "ipv4 /0 blacklist: all IPv4, no IPv6, not unknown", rules: []rules.Rule{
			r("all4", IP, B, "0.0.0.0/0"),
		}, checks: []check{
			black(sIP("0.0.0.0"), IP, "all4"),
			black(sIP("255.255.255.255"), IP, "all4"),
			black(sIP("::ffff:8.8.8.8"), IP, "all4"),
			allow(sIP("2001:db8::1")),
			allow(sIP("::")),
			allow(rules.Subject{}),
		}},
		{name: "ipv6 /0 blacklist: all IPv6, no IPv4 nor mapped IPv4", rules: []rules.Rule{
			r("all6", IP, B, "::/0"),
		}, checks: []check{
			black(sIP("::"), IP, "all6"),
			black(sIP("2001:db8::1"), IP, "all6"),
			black(sIP("ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff"), IP, "all6"),
			allow(sIP("8.8.8.8")),
			allow(sIP("::ffff:8.8.8.8")),
		}},
		{name: "ipv4 /0 whitelist: IPv6 clients are refused", rules: []rules.Rule{
			r("all4", IP, W, "0.0.0.0/0"),
		}, checks: []check{
			allow(sIP("8.8.8.8")),
			allow(sIP("::ffff:8.8.8.8")),
			notWhite(sIP("2001:db8::1"), IP),
		}},
		{name: "mapped /96 rule is all of IPv4", rules: []rules.Rule{
			r("m", IP, B, "::ffff:0.0.0.0/96"),
		}, checks: []check{
			black(sIP("1.2.3.4"), IP, "m"),
			allow(sIP("2001:db8::1")),
		}},
		{name: "ipv4 /32 edges", rules: []rules.Rule{
			r("one", IP, B, "192.0.2.1/32"),
		}, checks: []check{
			black(sIP("192.0.2.1"), IP, "one"),
			black(sIP("::ffff:192.0.2.1"), IP, "one"),
			allow(sIP("192.0.2.0")),
			allow(sIP("192.0.2.2")),
			// Same bits, other family: 192.0.2.1 written as a plain (not mapped) IPv6 address.
			allow(sIP("::c000:201")),
		}},
		{name: "ipv4 /31 and /24 boundaries", rules: []rules.Rule{
			r("p31", IP, B, "192.0.2.0/31"), r("p24", IP, W, "198.51.100.0/24"),
		}, checks: []check{
			black(sIP("192.0.2.0"), IP, "p31"),
			black(sIP("192.0.2.1"), IP, "p31"),
			notWhite(sIP("192.0.2.2"), IP),
			allow(sIP("198.51.100.0")),
			allow(sIP("198.51.100.255")),
			notWhite(sIP("198.51.99.255"), IP),
			notWhite(sIP("198.51.101.0"), IP),
		}},
		{name: "ipv6 /128 edges", rules: []rules.Rule{
			r("one", IP, B, "2001:db8::1/128"),
		}, checks: []check{
			black(sIP("2001:db8::1"), IP, "one"),
			black(sIP("2001:0db8:0:0:0:0:0:0001"), IP, "one"),
			allow(sIP("2001:db8::")),
			allow(sIP("2001:db8::2")),
		}},
		{name: "ipv6 /64 boundaries", rules: []rules.Rule{
			r("net", IP, B, "2001:db8:0:1::/64"),
		}, checks: []check{
			black(sIP("2001:db8:0:1::"), IP, "net"),
			black(sIP("2001:db8:0:1:ffff:ffff:ffff:ffff"), IP, "net"),
			allow(sIP("2001:db8:0:0:ffff:ffff:ffff:ffff")),
			allow(sIP("2001:db8:0:2::")),
		}},
		{name: "v4-mapped subject and v4-mapped rule", rules: []rules.Rule{
			r("v4", IP, B, "203.0.113.0/24"), r("mapped", IP, B, "::ffff:198.51.100.0/120"),
		}, checks: []check{
			black(sIP("::ffff:203.0.113.9"), IP, "v4"),
			black(sIP("198.51.100.9"), IP, "mapped"),
			black(sIP("::ffff:198.51.100.9"), IP, "mapped"),
		}},
		{name: "zoned subject address matches", rules: []rules.Rule{
			r("ll", IP, B, "fe80::/10"),
		}, checks: []check{
			black(sIP("fe80::1%eth0"), IP, "ll"),
			black(sIP("fe80::1"), IP, "ll"),
		}},
		{name: "hwid exact, surrounding space ignored", rules: []rules.Rule{
			r("b", HW, B, "Dev-1"),
		}, checks: []check{
			black(sHW("Dev-1"), HW, "b"),
			black(sHW("  Dev-1\t"), HW, "b"),
			allow(sHW("dev-1")),
			allow(sHW("DEV-1")),
			allow(sHW("Dev-1x")),
			allow(sHW("Dev- 1")),
			allow(sHW("   ")), // blank is unknown
		}},
		{name: "hwid whitelist: blank is unknown", rules: []rules.Rule{
			r("w", HW, W, "Dev-1"),
		}, checks: []check{
			allow(sHW(" Dev-1 ")),
			notWhite(sHW("   "), HW),
			notWhite(sHW("dev-1"), HW),
		}},
		{name: "country placeholders are unknown", rules: []rules.Rule{
			r("b", C, B, "US"),
		}, checks: []check{
			black(sC("us"), C, "b"),
			black(sC(" US "), C, "b"),
			allow(sC("XX")),
			allow(sC("T1")),
			allow(sC("USA")),
		}},
		{name: "country inactive: whitelist ignored", noCountry: true, rules: []rules.Rule{
			r("w", C, W, "DE"), r("b", C, B, "FR"),
		}, checks: []check{
			allow(sC("")),
			allow(sC("US")),
			allow(sC("FR")),
		}},
		{name: "country inactive: other types still apply", noCountry: true, rules: []rules.Rule{
			r("wc", C, W, "DE"), r("wi", IP, W, "10.0.0.0/8"), r("bh", HW, B, "bad"),
		}, checks: []check{
			allow(rules.Subject{IP: ip("10.0.0.1"), Country: "US"}),
			notWhite(rules.Subject{IP: ip("11.0.0.1"), Country: "DE"}, IP),
			black(rules.Subject{IP: ip("10.0.0.1"), HWID: "bad", Country: "DE"}, HW, "bh"),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			set, err := rules.Compile(tc.rules, rules.Options{CountryAvailable: !tc.noCountry})
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range tc.checks {
				d := set.Check(c.subject)
				ok := d.Allowed == c.allowed && d.Type == c.typ && d.Reason == c.reason
				if c.ruleID != "" {
					ok = ok && d.Rule != nil && d.Rule.ID == c.ruleID
				} else {
					ok = ok && d.Rule == nil
				}
				if !ok {
					t.Errorf("Check(%+v) = %+v (rule %+v), want allowed=%v type=%q reason=%q rule=%q",
						c.subject, d, d.Rule, c.allowed, c.typ, c.reason, c.ruleID)
				}
			}
		})
	}
}

func TestCountryRulesActive(t *testing.T) {
	country := rules.Rule{Type: rules.TypeCountry, Action: rules.ActionWhitelist, Value: "DE", Enabled: true}
	ipRule := rules.Rule{Type: rules.TypeIP, Action: rules.ActionBlacklist, Value: "10.0.0.0/8", Enabled: true}
	disabled := country
	disabled.Enabled = false
	tests := []struct {
		name      string
		rules     []rules.Rule
		available bool
		want      bool
		wantLen   int
	}{
		{"enabled country rule, resolver", []rules.Rule{country, ipRule}, true, true, 2},
		{"enabled country rule, no resolver", []rules.Rule{country, ipRule}, false, false, 1},
		{"disabled country rule only", []rules.Rule{disabled, ipRule}, true, false, 1},
		{"no country rule", []rules.Rule{ipRule}, true, false, 1},
		{"nothing", nil, true, false, 0},
	}
	for _, tc := range tests {
		set, err := rules.Compile(tc.rules, rules.Options{CountryAvailable: tc.available})
		if err != nil {
			t.Fatal(err)
		}
		if got := set.CountryRulesActive(); got != tc.want {
			t.Errorf("%s: CountryRulesActive = %v, want %v", tc.name, got, tc.want)
		}
		if got := set.Len(); got != tc.wantLen {
			t.Errorf("%s: Len = %d, want %d", tc.name, got, tc.wantLen)
		}
	}
}

func TestNilSetAllowsEverything(t *testing.T) {
	var set *rules.Set
	if d := set.Check(rules.Subject{IP: ip("10.0.0.1"), HWID: "x", Country: "DE"}); !d.Allowed {
		t.Fatalf("nil set refused: %+v", d)
	}
	if set.CountryRulesActive() || set.Len() != 0 {
		t.Fatal("nil set reports rules")
	}
}

func TestCompileRefusesInvalidEnabledRules(t *testing.T) {
	good := rules.Rule{ID: "ok", Type: rules.TypeIP, Action: rules.ActionBlacklist, Value: "10.0.0.1", Enabled: true}
	tests := []struct {
		name      string
		bad       rules.Rule
		available bool
		wantField string
	}{
		{"bad ip", rules.Rule{ID: "x", Type: rules.TypeIP, Action: rules.ActionBlacklist, Value: "10.0.0.300", Enabled: true}, true, "value"},
		{"bad type", rules.Rule{ID: "x", Type: "mac", Action: rules.ActionBlacklist, Value: "aa", Enabled: true}, true, "type"},
		{"bad action", rules.Rule{ID: "x", Type: rules.TypeHWID, Action: "block", Value: "aa", Enabled: true}, true, "action"},
		// Validated even while country rules are inactive, so corrupt data shows up at once
		// rather than on the day a resolver is configured.
		{"bad country, no resolver", rules.Rule{ID: "x", Type: rules.TypeCountry, Action: rules.ActionWhitelist, Value: "XK", Enabled: true}, false, "value"},
	}
	for _, tc := range tests {
		set, err := rules.Compile([]rules.Rule{good, tc.bad}, rules.Options{CountryAvailable: tc.available})
		if err == nil || set != nil {
			t.Errorf("%s: Compile = %v, %v; want an error", tc.name, set, err)
			continue
		}
		var e *core.Error
		if !errors.As(err, &e) || e.Code != core.CodeValidation || e.Field != tc.wantField {
			t.Errorf("%s: error %v, want a validation error for %q", tc.name, err, tc.wantField)
		}
		if !strings.Contains(err.Error(), `rule 1 (id "x")`) {
			t.Errorf("%s: error %q does not say which rule", tc.name, err)
		}
	}

	// A disabled rule is not looked at, whatever it holds.
	junk := rules.Rule{Type: "junk", Action: "junk", Value: "", Enabled: false}
	set, err := rules.Compile([]rules.Rule{junk, good}, rules.Options{})
	if err != nil {
		t.Fatalf("disabled invalid rule failed compilation: %v", err)
	}
	if d := set.Check(rules.Subject{IP: ip("10.0.0.1")}); d.Allowed || d.Rule.ID != "ok" {
		t.Fatalf("Check = %+v, want refused by rule ok", d)
	}
}

func TestCompileDoesNotAliasInput(t *testing.T) {
	in := []rules.Rule{{ID: "a", Type: rules.TypeHWID, Action: rules.ActionBlacklist, Value: " dev ", Enabled: true}}
	set, err := rules.Compile(in, rules.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in[0].Value, in[0].Enabled, in[0].ID = "other", false, "changed"
	d := set.Check(rules.Subject{HWID: "dev"})
	if d.Allowed || d.Rule.ID != "a" || d.Rule.Value != "dev" {
		t.Fatalf("after changing the input, Check = %+v (rule %+v), want refused by a with value dev", d, d.Rule)
	}
}

// TestCheckConcurrent runs Check from several goroutines on one Set; with -race it proves
// the Set is read-only after Compile.
func TestCheckConcurrent(t *testing.T) {
	set, err := rules.Compile([]rules.Rule{
		{ID: "b", Type: rules.TypeIP, Action: rules.ActionBlacklist, Value: "10.1.0.0/16", Enabled: true},
		{ID: "w", Type: rules.TypeIP, Action: rules.ActionWhitelist, Value: "10.0.0.0/8", Enabled: true},
		{ID: "h", Type: rules.TypeHWID, Action: rules.ActionBlacklist, Value: "bad", Enabled: true},
		{ID: "c", Type: rules.TypeCountry, Action: rules.ActionBlacklist, Value: "RU", Enabled: true},
	}, rules.Options{CountryAvailable: true})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		s       rules.Subject
		allowed bool
	}{
		{rules.Subject{IP: ip("10.2.0.1")}, true},
		{rules.Subject{IP: ip("10.1.0.1")}, false},
		{rules.Subject{IP: ip("11.0.0.1")}, false},
		{rules.Subject{IP: ip("10.2.0.1"), HWID: "bad"}, false},
		{rules.Subject{IP: ip("10.2.0.1"), Country: "ru"}, false},
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := range 8 {
		wg.Go(func() {
			for i := range 2000 {
				c := cases[(g+i)%len(cases)]
				if d := set.Check(c.s); d.Allowed != c.allowed {
					errs <- fmt.Sprintf("Check(%+v) = %+v", c.s, d)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for e := range errs {
		t.Error(e)
	}
}
