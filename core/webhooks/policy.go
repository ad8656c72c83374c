package webhooks

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/keyward/keyward/core"
)

// FieldURL is the request member named by every URL validation error (SPEC 2, Integration).
const FieldURL = "webhookUrl"

// MaxURLLength bounds a webhook URL. Real chat-platform URLs are under 200 characters; the
// bound keeps stored records and log lines small without refusing any sensible endpoint.
const MaxURLLength = 2048

// DefaultResolveTimeout bounds the DNS lookup done while validating a URL, so a slow or
// hostile name server cannot hold a dashboard request open.
const DefaultResolveTimeout = 5 * time.Second

// Resolver looks up the addresses of a host name. *net.Resolver satisfies it; tests inject
// a fake so validation never depends on the network.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// Validator checks webhook URLs against the destination policy. The zero value is ready
// to use: it resolves names with net.DefaultResolver and refuses non-public addresses.
type Validator struct {
	// Resolver resolves host names; nil means net.DefaultResolver.
	Resolver Resolver
	// Timeout bounds the lookup; zero means DefaultResolveTimeout.
	Timeout time.Duration
	// AllowPrivate skips the address checks (not the https and userinfo checks). It exists
	// for tests and for installations whose integrations live on a private network.
	AllowPrivate bool
}

// ValidateURL checks a webhook URL with the default resolver: it must be an absolute https
// URL with a host and no userinfo, at most MaxURLLength long, and unless allowPrivate is
// set its host must be, or resolve only to, public addresses. Errors are VALIDATION_ERROR
// on the webhookUrl field.
//
// Validation alone cannot stop DNS rebinding (a name that resolves differently later), so
// deliveries go through NewClient, which repeats the address check on every connection.
func ValidateURL(raw string, allowPrivate bool) (*url.URL, error) {
	return Validator{AllowPrivate: allowPrivate}.Validate(context.Background(), raw)
}

// Validate is ValidateURL with this validator's resolver, timeout and switch.
func (v Validator) Validate(ctx context.Context, raw string) (*url.URL, error) {
	if raw == "" {
		return nil, core.Invalid(FieldURL, "webhookUrl is required")
	}
	if len(raw) > MaxURLLength {
		return nil, core.Invalid(FieldURL, "webhookUrl must be at most %d characters", MaxURLLength)
	}
	u, err := url.Parse(raw)
	if err != nil {
		// The parse error echoes the URL, which may hold a token; keep it for logs only.
		e := core.Invalid(FieldURL, "webhookUrl is not a valid URL")
		e.Cause = err
		return nil, e
	}
	if u.Scheme != "https" {
		return nil, core.Invalid(FieldURL, "webhookUrl must use https")
	}
	if u.Opaque != "" || u.Host == "" {
		return nil, core.Invalid(FieldURL, "webhookUrl must be an absolute URL with a host")
	}
	if u.User != nil {
		// Credentials in the URL would be sent to the receiver in clear headers and shown
		// in logs; chat platforms put their tokens in the path instead.
		return nil, core.Invalid(FieldURL, "webhookUrl must not contain a user name or password")
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return nil, core.Invalid(FieldURL, "webhookUrl has an invalid port")
		}
	}

	host := strings.TrimSuffix(strings.ToLower(u.Hostname()), ".")
	if host == "" {
		return nil, core.Invalid(FieldURL, "webhookUrl must be an absolute URL with a host")
	}
	addr, isIP, err := parseHostIP(host)
	if err != nil {
		return nil, err
	}
	if isIP {
		if !v.AllowPrivate && !IsPublicAddr(addr) {
			return nil, core.Invalid(FieldURL, "webhookUrl must point to a public address")
		}
		return u, nil
	}
	if err := checkHostName(host); err != nil {
		return nil, err
	}
	if v.AllowPrivate {
		// Private networks may use names only their own resolver knows; the dial still
		// connects wherever the name points, which is what the switch asks for.
		return u, nil
	}
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		// RFC 6761: these names are loopback by definition, whatever a resolver says.
		return nil, core.Invalid(FieldURL, "webhookUrl must point to a public address")
	}
	if err := v.checkResolved(ctx, host); err != nil {
		return nil, err
	}
	return u, nil
}

// checkResolved resolves host and requires every answer to be public: a name with one
// private answer among public ones would let a delivery reach the private one.
func (v Validator) checkResolved(ctx context.Context, host string) error {
	r := v.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	timeout := v.Timeout
	if timeout <= 0 {
		timeout = DefaultResolveTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addrs, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil || len(addrs) == 0 {
		e := core.Invalid(FieldURL, "webhookUrl host %q could not be resolved", host)
		e.Cause = fmt.Errorf("resolve webhook host %q: %w", host, err)
		return e
	}
	for _, a := range addrs {
		if !IsPublicAddr(a) {
			return core.Invalid(FieldURL, "webhookUrl host %q resolves to a non-public address", host)
		}
	}
	return nil
}

// parseHostIP reports whether host is an IP literal and returns it. Besides the standard
// forms it follows the WHATWG URL rule that a host whose last label is a number is an IPv4
// address in the inet_aton syntax (2130706433, 0x7f000001, 0177.1, 127.1): browsers and the
// C resolver treat such hosts as addresses, so they must not slip through as "names".
func parseHostIP(host string) (netip.Addr, bool, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		if a.Zone() != "" {
			return netip.Addr{}, false, core.Invalid(FieldURL, "webhookUrl must point to a public address")
		}
		return a, true, nil
	}
	if !endsInNumber(host) {
		return netip.Addr{}, false, nil
	}
	a, ok := parseLegacyIPv4(host)
	if !ok {
		return netip.Addr{}, false, core.Invalid(FieldURL, "webhookUrl host is not a valid address")
	}
	return a, true, nil
}

// endsInNumber is the WHATWG "ends in a number" check: the last label is all decimal
// digits, or 0x followed by hex digits.
func endsInNumber(host string) bool {
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") {
		for _, c := range last[2:] {
			if !isHex(c) {
				return false
			}
		}
		return true
	}
	for _, c := range last {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// parseLegacyIPv4 parses the inet_aton forms: one to four parts in decimal, octal (leading
// 0) or hex (0x); the last part fills the remaining bytes.
func parseLegacyIPv4(host string) (netip.Addr, bool) {
	parts := strings.Split(host, ".")
	if len(parts) > 4 {
		return netip.Addr{}, false
	}
	nums := make([]uint64, len(parts))
	for i, p := range parts {
		n, ok := parseLegacyPart(p)
		if !ok {
			return netip.Addr{}, false
		}
		nums[i] = n
	}
	var v uint64
	for i, n := range nums[:len(nums)-1] {
		if n > 255 {
			return netip.Addr{}, false
		}
		v |= n << (8 * (3 - i))
	}
	last := nums[len(nums)-1]
	if last >= 1<<(8*(5-len(nums))) {
		return netip.Addr{}, false
	}
	v |= last
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)}), true
}

func parseLegacyPart(p string) (uint64, bool) {
	base := 10
	switch {
	case p == "":
		return 0, false
	case strings.HasPrefix(p, "0x"):
		p, base = p[2:], 16
		if p == "" {
			return 0, true // "0x" alone is zero in inet_aton and WHATWG
		}
	case len(p) > 1 && p[0] == '0':
		p, base = p[1:], 8
	}
	n, err := strconv.ParseUint(p, base, 32)
	return n, err == nil
}

func isHex(c rune) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// checkHostName accepts ASCII DNS names (letters, digits, hyphen, underscore). Internationalised
// names must be given in their xn-- form so that what is validated is exactly what is resolved.
func checkHostName(host string) error {
	if len(host) > 253 {
		return core.Invalid(FieldURL, "webhookUrl host is too long")
	}
	for _, label := range strings.Split(host, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return core.Invalid(FieldURL, "webhookUrl host is not a valid name")
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
				return core.Invalid(FieldURL, "webhookUrl host is not a valid name (use the xn-- form for international names)")
			}
		}
	}
	return nil
}

// ErrBlockedAddress is wrapped by the dial-time refusal of a non-public address, so callers
// can tell a policy refusal from a network failure with errors.Is.
var ErrBlockedAddress = errors.New("destination address is not public")

// Address ranges that are never a webhook destination. The list follows the IANA IPv4 and
// IPv6 special-purpose registries: everything not globally reachable, plus documentation
// and benchmarking ranges that no real receiver uses.
var blockedV4 = mustPrefixes(
	"0.0.0.0/8",       // "this network", includes the unspecified address
	"10.0.0.0/8",      // private
	"100.64.0.0/10",   // carrier-grade NAT shared space
	"127.0.0.0/8",     // loopback
	"169.254.0.0/16",  // link-local, includes the cloud metadata address 169.254.169.254
	"172.16.0.0/12",   // private
	"192.0.0.0/24",    // IETF protocol assignments
	"192.0.2.0/24",    // documentation (TEST-NET-1)
	"192.88.99.0/24",  // deprecated 6to4 relay anycast
	"192.168.0.0/16",  // private
	"198.18.0.0/15",   // benchmarking
	"198.51.100.0/24", // documentation (TEST-NET-2)
	"203.0.113.0/24",  // documentation (TEST-NET-3)
	"224.0.0.0/4",     // multicast
	"240.0.0.0/4",     // reserved, includes the broadcast address
)

// blockedV6 also lists ranges outside 2000::/3, which IsPublicAddr refuses anyway, so the
// list reads as the complete policy.
var blockedV6 = mustPrefixes(
	"::/8",           // unspecified, loopback, IPv4-compatible (mapped is unmapped first)
	"64:ff9b:1::/48", // local-use NAT64
	"100::/64",       // discard-only
	"2001::/23",      // IETF protocol assignments, includes Teredo
	"2001:db8::/32",  // documentation
	"3fff::/20",      // documentation
	"5f00::/16",      // segment routing SIDs
	"fc00::/7",       // unique local, includes the AWS metadata address fd00:ec2::254
	"fe80::/10",      // link-local
	"fec0::/10",      // deprecated site-local
	"ff00::/8",       // multicast
)

var (
	globalUnicastV6 = netip.MustParsePrefix("2000::/3")
	nat64V6         = netip.MustParsePrefix("64:ff9b::/96")
	sixToFourV6     = netip.MustParsePrefix("2002::/16")
)

func mustPrefixes(ss ...string) []netip.Prefix {
	ps := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		ps[i] = netip.MustParsePrefix(s)
	}
	return ps
}

// IsPublicAddr reports whether a is a globally reachable unicast address that a webhook may
// be delivered to. IPv4-mapped IPv6 addresses are judged as the IPv4 address they carry,
// and so are the NAT64 and 6to4 forms, which route to the IPv4 address they embed.
func IsPublicAddr(a netip.Addr) bool {
	if !a.IsValid() || a.Zone() != "" {
		return false
	}
	a = a.Unmap()
	if a.Is4() {
		for _, p := range blockedV4 {
			if p.Contains(a) {
				return false
			}
		}
		return true
	}
	b := a.As16()
	switch {
	case nat64V6.Contains(a):
		return IsPublicAddr(netip.AddrFrom4([4]byte(b[12:16])))
	case sixToFourV6.Contains(a):
		return IsPublicAddr(netip.AddrFrom4([4]byte(b[2:6])))
	case !globalUnicastV6.Contains(a):
		// Outside 2000::/3 nothing is allocated for global unicast today.
		return false
	}
	for _, p := range blockedV6 {
		if p.Contains(a) {
			return false
		}
	}
	return true
}
