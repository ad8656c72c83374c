package rules_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/rules"
)

func TestValidate(t *testing.T) {
	long := strings.Repeat("é", rules.MaxHWIDLength) // 256 characters, 512 bytes
	tests := []struct {
		name                string
		typ, action, value  string
		want                string
		wantField           string // "" = valid
		wantMessageContains string
	}{
		// type and action
		{name: "missing type", typ: "", action: "blacklist", value: "x", wantField: "type", wantMessageContains: "required"},
		{name: "unknown type", typ: "email", action: "blacklist", value: "x", wantField: "type", wantMessageContains: "ip, hwid, country"},
		{name: "type is case-sensitive", typ: "IP", action: "blacklist", value: "1.2.3.4", wantField: "type"},
		{name: "missing action", typ: "ip", action: "", value: "1.2.3.4", wantField: "action", wantMessageContains: "required"},
		{name: "unknown action", typ: "ip", action: "deny", value: "1.2.3.4", wantField: "action", wantMessageContains: "blacklist, whitelist"},
		{name: "type checked before action", typ: "nope", action: "nope", value: "", wantField: "type"},
		{name: "action checked before value", typ: "ip", action: "nope", value: "", wantField: "action"},
		{name: "empty value", typ: "hwid", action: "whitelist", value: "", wantField: "value", wantMessageContains: "required"},
		{name: "blank value", typ: "country", action: "whitelist", value: " \t ", wantField: "value", wantMessageContains: "required"},

		// ip
		{name: "ipv4 address", typ: "ip", action: "blacklist", value: "203.0.113.7", want: "203.0.113.7"},
		{name: "ipv4 trimmed", typ: "ip", action: "blacklist", value: "  203.0.113.7\n", want: "203.0.113.7"},
		{name: "ipv4 /32 is the address", typ: "ip", action: "blacklist", value: "203.0.113.7/32", want: "203.0.113.7"},
		{name: "ipv4 cidr", typ: "ip", action: "whitelist", value: "10.0.0.0/8", want: "10.0.0.0/8"},
		{name: "ipv4 cidr masked", typ: "ip", action: "whitelist", value: "10.1.2.3/8", want: "10.0.0.0/8"},
		{name: "ipv4 /0", typ: "ip", action: "blacklist", value: "0.0.0.0/0", want: "0.0.0.0/0"},
		{name: "ipv4 /0 masked", typ: "ip", action: "blacklist", value: "1.2.3.4/0", want: "0.0.0.0/0"},
		{name: "ipv6 address compressed", typ: "ip", action: "blacklist", value: "2001:0DB8:0000:0000:0000:0000:0000:0001", want: "2001:db8::1"},
		{name: "ipv6 /128 is the address", typ: "ip", action: "blacklist", value: "2001:db8::1/128", want: "2001:db8::1"},
		{name: "ipv6 cidr masked", typ: "ip", action: "blacklist", value: "2001:db8:1:2::5/48", want: "2001:db8:1::/48"},
		{name: "ipv6 /0", typ: "ip", action: "blacklist", value: "::/0", want: "::/0"},
		{name: "v4-mapped address unmapped", typ: "ip", action: "blacklist", value: "::ffff:203.0.113.7", want: "203.0.113.7"},
		{name: "v4-mapped cidr unmapped", typ: "ip", action: "blacklist", value: "::ffff:203.0.113.0/120", want: "203.0.113.0/24"},
		{name: "v4-mapped /96 is all of ipv4", typ: "ip", action: "blacklist", value: "::ffff:0.0.0.0/96", want: "0.0.0.0/0"},
		{name: "prefix containing mapped range stays v6", typ: "ip", action: "blacklist", value: "::ffff:0:0/95", want: "::fffe:0:0/95"},
		{name: "ip garbage", typ: "ip", action: "blacklist", value: "not-an-ip", wantField: "value", wantMessageContains: "IP address or CIDR"},
		{name: "ip range form refused", typ: "ip", action: "blacklist", value: "10.0.0.1-10.0.0.9", wantField: "value"},
		{name: "ipv4 prefix too long", typ: "ip", action: "blacklist", value: "10.0.0.0/33", wantField: "value"},
		{name: "ipv6 prefix too long", typ: "ip", action: "blacklist", value: "2001:db8::/129", wantField: "value"},
		{name: "ipv4 octet out of range", typ: "ip", action: "blacklist", value: "256.1.1.1", wantField: "value"},
		{name: "ipv4 leading zeros refused", typ: "ip", action: "blacklist", value: "010.0.0.1", wantField: "value"},
		{name: "zone refused", typ: "ip", action: "blacklist", value: "fe80::1%eth0", wantField: "value", wantMessageContains: "zone"},
		{name: "zone in cidr refused", typ: "ip", action: "blacklist", value: "fe80::1%eth0/64", wantField: "value"},
		{name: "hostname refused", typ: "ip", action: "blacklist", value: "example.com", wantField: "value"},

		// hwid
		{name: "hwid kept as is", typ: "hwid", action: "blacklist", value: "ABC-def_123", want: "ABC-def_123"},
		{name: "hwid trimmed", typ: "hwid", action: "blacklist", value: "  ABC def  ", want: "ABC def"},
		{name: "hwid one character", typ: "hwid", action: "blacklist", value: "x", want: "x"},
		{name: "hwid 256 characters", typ: "hwid", action: "blacklist", value: long, want: long},
		{name: "hwid 257 characters", typ: "hwid", action: "blacklist", value: long + "é", wantField: "value", wantMessageContains: "at most 256"},
		{name: "hwid control character", typ: "hwid", action: "blacklist", value: "abc\x00def", wantField: "value", wantMessageContains: "printable"},
		{name: "hwid inner newline", typ: "hwid", action: "blacklist", value: "abc\ndef", wantField: "value", wantMessageContains: "printable"},
		{name: "hwid invalid utf-8", typ: "hwid", action: "blacklist", value: "abc\xffdef", wantField: "value", wantMessageContains: "UTF-8"},
		{name: "hwid unicode", typ: "hwid", action: "whitelist", value: "機械-01", want: "機械-01"},

		// country
		{name: "country upper", typ: "country", action: "blacklist", value: "DE", want: "DE"},
		{name: "country lower", typ: "country", action: "blacklist", value: "de", want: "DE"},
		{name: "country mixed and trimmed", typ: "country", action: "whitelist", value: " uS ", want: "US"},
		{name: "country first", typ: "country", action: "whitelist", value: "AD", want: "AD"},
		{name: "country last", typ: "country", action: "whitelist", value: "zw", want: "ZW"},
		{name: "country recent assignment", typ: "country", action: "whitelist", value: "SS", want: "SS"},
		{name: "country XK user-assigned", typ: "country", action: "blacklist", value: "XK", wantField: "value", wantMessageContains: "ISO 3166-1"},
		{name: "country XX placeholder", typ: "country", action: "blacklist", value: "XX", wantField: "value"},
		{name: "country T1 placeholder", typ: "country", action: "blacklist", value: "T1", wantField: "value"},
		{name: "country EU region", typ: "country", action: "blacklist", value: "EU", wantField: "value"},
		{name: "country withdrawn", typ: "country", action: "blacklist", value: "AN", wantField: "value"},
		{name: "country UK not ISO", typ: "country", action: "blacklist", value: "UK", wantField: "value"},
		{name: "country alpha-3", typ: "country", action: "blacklist", value: "DEU", wantField: "value"},
		{name: "country one letter", typ: "country", action: "blacklist", value: "D", wantField: "value"},
		{name: "country non-ascii", typ: "country", action: "blacklist", value: "DÉ", wantField: "value"},
		{name: "country name", typ: "country", action: "blacklist", value: "Germany", wantField: "value"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := rules.Validate(tc.typ, tc.action, tc.value)
			if tc.wantField == "" {
				if err != nil {
					t.Fatalf("Validate(%q, %q, %q) error: %v", tc.typ, tc.action, tc.value, err)
				}
				if got != tc.want {
					t.Fatalf("Validate(%q, %q, %q) = %q, want %q", tc.typ, tc.action, tc.value, got, tc.want)
				}
				// The canonical form is a fixed point: stored values validate to themselves.
				again, err := rules.Validate(tc.typ, tc.action, got)
				if err != nil || again != got {
					t.Fatalf("Validate of canonical %q = %q, %v; want it unchanged", got, again, err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate(%q, %q, %q) = %q, want a %s error", tc.typ, tc.action, tc.value, got, tc.wantField)
			}
			if got != "" {
				t.Errorf("Validate returned %q with an error", got)
			}
			var e *core.Error
			if !errors.As(err, &e) {
				t.Fatalf("error %T %v is not a *core.Error", err, err)
			}
			if e.Code != core.CodeValidation || e.Field != tc.wantField {
				t.Fatalf("error code %s field %q, want %s field %q (%v)", e.Code, e.Field, core.CodeValidation, tc.wantField, err)
			}
			if !strings.Contains(e.Message, tc.wantMessageContains) {
				t.Fatalf("message %q does not contain %q", e.Message, tc.wantMessageContains)
			}
		})
	}
}

func TestValidateTypeAndActionField(t *testing.T) {
	// The list operation validates its query parameters with its own field names.
	err := rules.ValidateType("filter.type", "bogus")
	var e *core.Error
	if !errors.As(err, &e) || e.Field != "filter.type" || !strings.Contains(e.Message, "filter.type") {
		t.Fatalf("ValidateType error = %v, want one naming filter.type", err)
	}
	err = rules.ValidateAction("filter.action", "bogus")
	if !errors.As(err, &e) || e.Field != "filter.action" {
		t.Fatalf("ValidateAction error = %v, want one naming filter.action", err)
	}
	for _, typ := range []string{rules.TypeIP, rules.TypeHWID, rules.TypeCountry} {
		if err := rules.ValidateType("type", typ); err != nil {
			t.Errorf("ValidateType(%q) = %v", typ, err)
		}
	}
	for _, a := range []string{rules.ActionBlacklist, rules.ActionWhitelist} {
		if err := rules.ValidateAction("action", a); err != nil {
			t.Errorf("ValidateAction(%q) = %v", a, err)
		}
	}
	if v, err := rules.ValidateValue(rules.TypeCountry, "fr"); err != nil || v != "FR" {
		t.Errorf(`ValidateValue(country, "fr") = %q, %v`, v, err)
	}
	if _, err := rules.ValidateValue("bogus", "x"); core.CodeOf(err) != core.CodeValidation {
		t.Errorf("ValidateValue with a bad type = %v, want a validation error", err)
	}
}

func TestHeaderCountry(t *testing.T) {
	tests := []struct {
		in   string
		want string
		ok   bool
	}{
		{"US", "US", true},
		{"us", "US", true},
		{" gb ", "GB", true},
		{"XX", "", false}, // Cloudflare: unknown
		{"T1", "", false}, // Cloudflare: Tor
		{"XK", "", false}, // user-assigned, not an ISO assignment
		{"EU", "", false},
		{"A1", "", false},
		{"", "", false},
		{"USA", "", false},
		{"U", "", false},
		{"U\x00", "", false},
		{"\xff\xff", "", false},
	}
	for _, tc := range tests {
		got, ok := rules.HeaderCountry(tc.in)
		if got != tc.want || ok != tc.ok {
			t.Errorf("HeaderCountry(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestAssignedCountries(t *testing.T) {
	// Every two-letter combination: exactly the 249 assigned codes are accepted, in
	// either case, and a sample of well-known unassigned ones is not.
	var accepted []string
	for a := 'A'; a <= 'Z'; a++ {
		for b := 'A'; b <= 'Z'; b++ {
			code := string([]rune{a, b})
			upper := rules.IsAssignedCountry(code)
			if lower := rules.IsAssignedCountry(strings.ToLower(code)); lower != upper {
				t.Errorf("IsAssignedCountry(%q) = %v but lower case = %v", code, upper, lower)
			}
			if upper {
				accepted = append(accepted, code)
			}
		}
	}
	if len(accepted) != 249 {
		t.Fatalf("%d assigned codes, want 249", len(accepted))
	}
	for _, c := range []string{"US", "DE", "CN", "BR", "AQ", "SS", "BQ", "CW", "SX", "AX", "UM", "TW", "PS", "EH"} {
		if !slices.Contains(accepted, c) {
			t.Errorf("%s is missing", c)
		}
	}
	for _, c := range []string{"XK", "XX", "UK", "EU", "AN", "YU", "CS", "ZZ", "AA", "QM", "T1"} {
		if rules.IsAssignedCountry(c) {
			t.Errorf("%s is accepted, want refused", c)
		}
	}
}
