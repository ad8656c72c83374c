package rules

import "strings"

// assignedCountries lists the 249 officially assigned ISO 3166-1 alpha-2 codes. Codes
// outside it (user-assigned ones such as XK or the proxies' XX and T1, reserved and
// withdrawn ones) are treated as unknown: a rule can only name a code listed here, so an
// unlisted code could never match a rule anyway, and treating it as unknown keeps a
// country whitelist closed to it.
//
// Source: the ISO 3166-1 list as shipped by Debian's iso-codes and tzdata's iso3166.tab
// (both agree); update it when ISO assigns or withdraws a code.
var assignedCountries = [...]string{
	"AD", "AE", "AF", "AG", "AI", "AL", "AM", "AO", "AQ", "AR", "AS", "AT", "AU", "AW", "AX", "AZ",
	"BA", "BB", "BD", "BE", "BF", "BG", "BH", "BI", "BJ", "BL", "BM", "BN", "BO", "BQ", "BR", "BS", "BT", "BV", "BW", "BY", "BZ",
	"CA", "CC", "CD", "CF", "CG", "CH", "CI", "CK", "CL", "CM", "CN", "CO", "CR", "CU", "CV", "CW", "CX", "CY", "CZ",
	"DE", "DJ", "DK", "DM", "DO", "DZ",
	"EC", "EE", "EG", "EH", "ER", "ES", "ET",
	"FI", "FJ", "FK", "FM", "FO", "FR",
	"GA", "GB", "GD", "GE", "GF", "GG", "GH", "GI", "GL", "GM", "GN", "GP", "GQ", "GR", "GS", "GT", "GU", "GW", "GY",
	"HK", "HM", "HN", "HR", "HT", "HU",
	"ID", "IE", "IL", "IM", "IN", "IO", "IQ", "IR", "IS", "IT",
	"JE", "JM", "JO", "JP",
	"KE", "KG", "KH", "KI", "KM", "KN", "KP", "KR", "KW", "KY", "KZ",
	"LA", "LB", "LC", "LI", "LK", "LR", "LS", "LT", "LU", "LV", "LY",
	"MA", "MC", "MD", "ME", "MF", "MG", "MH", "MK", "ML", "MM", "MN", "MO", "MP", "MQ", "MR", "MS", "MT", "MU", "MV", "MW", "MX", "MY", "MZ",
	"NA", "NC", "NE", "NF", "NG", "NI", "NL", "NO", "NP", "NR", "NU", "NZ",
	"OM",
	"PA", "PE", "PF", "PG", "PH", "PK", "PL", "PM", "PN", "PR", "PS", "PT", "PW", "PY",
	"QA",
	"RE", "RO", "RS", "RU", "RW",
	"SA", "SB", "SC", "SD", "SE", "SG", "SH", "SI", "SJ", "SK", "SL", "SM", "SN", "SO", "SR", "SS", "ST", "SV", "SX", "SY", "SZ",
	"TC", "TD", "TF", "TG", "TH", "TJ", "TK", "TL", "TM", "TN", "TO", "TR", "TT", "TV", "TW", "TZ",
	"UA", "UG", "UM", "US", "UY", "UZ",
	"VA", "VC", "VE", "VG", "VI", "VN", "VU",
	"WF", "WS",
	"YE", "YT",
	"ZA", "ZM", "ZW",
}

// countryIndex maps a two-letter code to a slot in a 26×26 table, so the hot path of Check
// looks a country up with arithmetic instead of hashing a string.
type countryIndex uint16

const countrySlots = 26 * 26

// assigned[i] is the upper-case code of slot i when it is assigned and "" otherwise; the
// strings are shared, so normalising a code never allocates.
var assigned = func() (t [countrySlots]string) {
	for _, c := range assignedCountries {
		i, ok := slotOf(c)
		if !ok || c != strings.ToUpper(c) {
			panic("rules: malformed country table entry " + c)
		}
		t[i] = c
	}
	return t
}()

// slotOf returns the table slot of a two-letter code in either case, or false when s is
// not two ASCII letters.
func slotOf(s string) (countryIndex, bool) {
	if len(s) != 2 {
		return 0, false
	}
	a, b := s[0]|0x20, s[1]|0x20 // ASCII lower-case; non-letters fall outside 'a'..'z' below
	if a < 'a' || a > 'z' || b < 'a' || b > 'z' {
		return 0, false
	}
	return countryIndex(a-'a')*26 + countryIndex(b-'a'), true
}

// assignedSlot returns the slot of s when it is an assigned code in either case.
func assignedSlot(s string) (countryIndex, bool) {
	i, ok := slotOf(s)
	if !ok || assigned[i] == "" {
		return 0, false
	}
	return i, true
}

// IsAssignedCountry reports whether s is an officially assigned ISO 3166-1 alpha-2 code,
// in either case.
func IsAssignedCountry(s string) bool {
	_, ok := assignedSlot(s)
	return ok
}

// HeaderCountry validates and normalises a country code taken from a trusted proxy's
// header (Cloudflare's CF-IPCountry and the like). It returns the upper-case code and true
// for an assigned ISO 3166-1 alpha-2 code, and "" and false for anything else: an empty or
// malformed header and the proxies' placeholders (XX for unknown, T1 for Tor, EU/AP for
// regions) all mean "country unknown", which never matches a blacklist and fails a
// whitelist.
func HeaderCountry(value string) (string, bool) {
	i, ok := assignedSlot(strings.TrimSpace(value))
	if !ok {
		return "", false
	}
	return assigned[i], true
}
