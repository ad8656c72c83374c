package rules

import (
	"net/netip"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/keyward/keyward/core"
)

// Rule types (SPEC 2 "Rule").
const (
	TypeIP      = "ip"
	TypeHWID    = "hwid"
	TypeCountry = "country"
)

// Rule actions (SPEC 2 "Rule").
const (
	ActionBlacklist = "blacklist"
	ActionWhitelist = "whitelist"
)

// MaxHWIDLength is the longest hwid rule value, in characters. Hardware ids are opaque
// strings chosen by the owner's client software; the bound keeps a rule set's memory and a
// request's size predictable.
const MaxHWIDLength = 256

// Field names used in validation errors; they are the request members of SPEC 4.7.
const (
	fieldType   = "type"
	fieldAction = "action"
	fieldValue  = "value"
)

// ValidateType checks a rule type; field names the request member for the error (the
// list operation passes its query parameter, create passes "type").
func ValidateType(field, typ string) error {
	switch typ {
	case TypeIP, TypeHWID, TypeCountry:
		return nil
	case "":
		return core.Invalid(field, "%s is required", field)
	}
	return core.Invalid(field, "%s must be one of ip, hwid, country", field)
}

// ValidateAction checks a rule action; field names the request member for the error.
func ValidateAction(field, action string) error {
	switch action {
	case ActionBlacklist, ActionWhitelist:
		return nil
	case "":
		return core.Invalid(field, "%s is required", field)
	}
	return core.Invalid(field, "%s must be one of blacklist, whitelist", field)
}

// Validate checks a rule's type, action and value and returns the value in the canonical
// form that is stored and compared:
//
//   - ip: one IPv4 or IPv6 address or CIDR. A CIDR is masked to its network
//     ("10.1.2.3/8" becomes "10.0.0.0/8"); an IPv4-mapped IPv6 address or CIDR inside
//     ::ffff:0:0/96 becomes its IPv4 form; a full-length prefix (/32, /128) becomes the bare
//     address, so "1.2.3.4", "1.2.3.4/32" and "::ffff:1.2.3.4" are one value. Zones
//     ("fe80::1%eth0") are refused: they name a local interface, which a client never has.
//   - hwid: 1 to MaxHWIDLength printable characters after trimming surrounding white
//     space; compared exactly, so case is kept.
//   - country: an assigned ISO 3166-1 alpha-2 code in either case, returned upper-case.
//
// Every value is trimmed of surrounding white space first. Errors are *core.Error with
// code VALIDATION_ERROR naming the field at fault ("type", "action" or "value").
func Validate(typ, action, value string) (string, error) {
	if err := ValidateType(fieldType, typ); err != nil {
		return "", err
	}
	if err := ValidateAction(fieldAction, action); err != nil {
		return "", err
	}
	return ValidateValue(typ, value)
}

// ValidateValue checks and normalises a value for a rule of type typ (see Validate); the
// update operation uses it, as it may change the value but never the type.
func ValidateValue(typ, value string) (string, error) {
	value = strings.TrimSpace(value)
	if value == "" {
		return "", core.Invalid(fieldValue, "value is required")
	}
	switch typ {
	case TypeIP:
		p, err := parseIPValue(value)
		if err != nil {
			return "", err
		}
		return prefixString(p), nil
	case TypeHWID:
		if err := validateHWID(value); err != nil {
			return "", err
		}
		return value, nil
	case TypeCountry:
		i, ok := assignedSlot(value)
		if !ok {
			return "", core.Invalid(fieldValue, "value must be an assigned ISO 3166-1 alpha-2 country code such as US or DE")
		}
		return assigned[i], nil
	}
	return "", ValidateType(fieldType, typ)
}

// parseIPValue parses an address or CIDR into its canonical prefix: masked, IPv4-mapped
// forms unmapped, a bare address as a full-length prefix.
func parseIPValue(value string) (netip.Prefix, error) {
	var p netip.Prefix
	if strings.Contains(value, "/") {
		var err error
		if p, err = netip.ParsePrefix(value); err != nil {
			return netip.Prefix{}, core.Invalid(fieldValue, "value must be an IP address or CIDR range, such as 203.0.113.7 or 203.0.113.0/24")
		}
	} else {
		a, err := netip.ParseAddr(value)
		if err != nil {
			return netip.Prefix{}, core.Invalid(fieldValue, "value must be an IP address or CIDR range, such as 203.0.113.7 or 203.0.113.0/24")
		}
		if a.Zone() != "" {
			return netip.Prefix{}, core.Invalid(fieldValue, "value must not carry an IPv6 zone")
		}
		p = netip.PrefixFrom(a, a.BitLen())
	}
	return canonicalPrefix(p), nil
}

// canonicalPrefix masks p and, when it lies wholly inside ::ffff:0:0/96, moves it to the
// IPv4 space, because Check unmaps the subject's address: without this a mapped rule could
// never match. A shorter IPv6 prefix that merely contains the mapped range (::/0 for
// instance) stays IPv6 and matches IPv6 clients only; IPv4 is its own family.
func canonicalPrefix(p netip.Prefix) netip.Prefix {
	if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
		p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
	}
	return p.Masked()
}

// prefixString writes a canonical prefix, a full-length one as the bare address.
func prefixString(p netip.Prefix) string {
	if p.IsSingleIP() {
		return p.Addr().String()
	}
	return p.String()
}

// validateHWID checks an already trimmed hwid value.
func validateHWID(v string) error {
	if !utf8.ValidString(v) {
		return core.Invalid(fieldValue, "value must be valid UTF-8")
	}
	if n := utf8.RuneCountInString(v); n > MaxHWIDLength {
		return core.Invalid(fieldValue, "value must be at most %d characters", MaxHWIDLength)
	}
	for _, r := range v {
		// Control and other non-printing characters would make two rules that look the
		// same in the dashboard compare different, so they are refused.
		if !unicode.IsPrint(r) {
			return core.Invalid(fieldValue, "value must contain printable characters only")
		}
	}
	return nil
}
