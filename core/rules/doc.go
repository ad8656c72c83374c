// Package rules owns an application's allow/deny rules (SPEC 2 "Rule", 4.7): validating
// and normalising a rule's type, action and value, compiling a rule list into an immutable
// Set, deciding whether a client may authenticate, and resolving a client's country (a
// MaxMind-format GeoIP database, or a trusted proxy's country header). It holds no
// storage and knows nothing of HTTP; the client authentication flow loads the rules,
// compiles them and calls (*Set).Check.
//
// # Rules
//
// A rule has a type (ip, hwid, country), an action (blacklist, whitelist), a value and an
// enabled flag. Values are stored in the canonical form Validate returns: an IP address or
// CIDR (masked; IPv4-mapped IPv6 written as IPv4; /32 and /128 as the bare address), a
// hardware id of 1 to 256 printable characters, or an assigned ISO 3166-1 alpha-2 code in
// upper case.
//
// # Semantics
//
// This is the contract Check implements and its tests pin down:
//
//  1. Disabled rules are ignored.
//  2. Any enabled blacklist rule that matches the subject denies it.
//  3. For each type separately: if at least one enabled whitelist rule of that type
//     exists, the subject's value of that type must match one of them, or it is denied.
//     A whitelist of one type says nothing about the others.
//  4. An unknown value (no IP, no HWID sent, country unknown) never matches a blacklist
//     rule, and fails a whitelist of its type.
//  5. Exception to 4: when no country resolver is configured (Options.CountryAvailable
//     false) country rules are inactive, ignored entirely, and
//     (*Set).CountryRulesActive reports false. Otherwise a country whitelist would lock
//     out every client of a server that cannot tell countries.
//  6. Otherwise the subject is allowed.
//
// Matching: ip rules match by prefix containment, IPv4 and IPv6 being separate families;
// a subject's IPv4-mapped IPv6 address is matched as the IPv4 address, so 1.2.3.0/24
// matches both 1.2.3.4 and ::ffff:1.2.3.4 (while ::/0 matches IPv6 clients only). hwid
// rules match exactly, case-sensitively (surrounding white space is trimmed on both
// sides). country rules match case-insensitively; a code that is not an assigned ISO code
// (a proxy's XX or T1, say) counts as unknown.
//
// # Countries
//
// CountryResolver turns an address into a country. GeoIP implements it over a
// GeoLite2/GeoIP2 Country or City database, reading country.iso_code. A country header
// set by a trusted proxy (CF-IPCountry) is read by the http layer, which alone knows
// whether the request came through such a proxy; HeaderCountry validates its value.
package rules
