package webhooks

import (
	"context"
	"errors"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keyward/keyward/core"
)

// fakeResolver answers from a map, so URL validation is tested without the network.
type fakeResolver struct {
	answers map[string][]string
	calls   atomic.Int32
}

func (r *fakeResolver) LookupNetIP(_ context.Context, network, host string) ([]netip.Addr, error) {
	r.calls.Add(1)
	if network != "ip" {
		return nil, errors.New("fake resolver: unexpected network " + network)
	}
	ss, ok := r.answers[host]
	if !ok {
		return nil, errors.New("fake resolver: no such host " + host)
	}
	var out []netip.Addr
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out, nil
}

func testResolver() *fakeResolver {
	return &fakeResolver{answers: map[string][]string{
		"hooks.example.com":    {"93.184.216.34"},
		"api.telegram.org":     {"149.154.167.220"},
		"discord.com":          {"162.159.135.232", "162.159.136.232", "2606:4700::6810:1"},
		"v6.example.com":       {"2606:4700:4700::1111"},
		"internal.example.com": {"10.0.0.5"},
		"mixed.example.com":    {"93.184.216.34", "1.1.1.1", "10.0.0.1"},
		"mixed6.example.com":   {"2606:4700:4700::1111", "::1"},
		"mapped.example.com":   {"::ffff:127.0.0.1"},
		"meta.example.com":     {"169.254.169.254"},
		"meta6.example.com":    {"fd00:ec2::254"},
		"cgnat.example.com":    {"100.64.1.1"},
		"empty.example.com":    {},
		"localhost":            {"93.184.216.34"}, // a lying resolver must not matter
	}}
}

func TestValidateURL(t *testing.T) {
	ok := []string{
		"https://hooks.example.com/x",
		"https://HOOKS.Example.COM./x?y=1",
		"https://hooks.example.com:8443/path",
		"https://discord.com/api/webhooks/1/abc",
		"https://v6.example.com/",
		"https://93.184.216.34/hook",
		"https://1.1.1.1",
		"https://[2606:4700:4700::1111]/",
		"https://[::ffff:93.184.216.34]/", // mapped public
		"https://[64:ff9b::5db8:d822]/",   // NAT64 of 93.184.216.34
		"https://1572395042/",             // 93.184.216.34 as one number
		"https://0x5db8d822/",             // the same in hex
		"https://api.telegram.org/bot1:A/sendMessage?chat_id=5",
	}
	for _, raw := range ok {
		v := Validator{Resolver: testResolver()}
		if _, err := v.Validate(context.Background(), raw); err != nil {
			t.Errorf("Validate(%q) = %v, want ok", raw, err)
		}
	}

	bad := []string{
		// Shape.
		"",
		"http://hooks.example.com/",
		"ftp://hooks.example.com/",
		"HTTP://hooks.example.com/",
		"https:hooks.example.com",
		"//hooks.example.com/x",
		"/relative",
		"https:///path",
		"https://user:pass@hooks.example.com/",
		"https://user@hooks.example.com/",
		"https://:pw@hooks.example.com/",
		"https://hooks.example.com:0/",
		"https://hooks.example.com:70000/",
		"https://exa mple.com/",
		"https://ex%41mple.com/",
		"https://bücher.example.com/",
		"https://-bad-.example.com/",
		"https://a..b.example.com/",
		"https://hooks.example.com/" + strings.Repeat("a", MaxURLLength),
		// IPv4 private and special ranges.
		"https://0.0.0.0/",
		"https://0.1.2.3/",
		"https://10.0.0.1/",
		"https://10.255.255.255/",
		"https://100.64.0.1/",
		"https://100.127.255.255/",
		"https://100.100.100.200/", // Alibaba metadata, inside CGNAT space
		"https://127.0.0.1/",
		"https://127.255.255.254:8443/",
		"https://169.254.0.1/",
		"https://169.254.169.254/latest/meta-data/",
		"https://172.16.0.1/",
		"https://172.31.255.255/",
		"https://192.0.0.192/", // Oracle metadata, IETF protocol assignments
		"https://192.0.2.1/",
		"https://192.88.99.1/",
		"https://192.168.1.1/",
		"https://198.18.0.1/",
		"https://198.19.255.255/",
		"https://198.51.100.7/",
		"https://203.0.113.9/",
		"https://224.0.0.1/",
		"https://239.255.255.250/",
		"https://240.0.0.1/",
		"https://255.255.255.255/",
		// IPv6.
		"https://[::]/",
		"https://[::1]/",
		"https://[::1]:8443/",
		"https://[fe80::1]/",
		"https://[fe80::1%25eth0]/",
		"https://[fc00::1]/",
		"https://[fd12:3456::1]/",
		"https://[fd00:ec2::254]/", // AWS metadata over IPv6
		"https://[ff02::1]/",
		"https://[2001:db8::1]/",
		"https://[2001::1]/", // Teredo
		"https://[100::1]/",
		"https://[fec0::1]/",
		"https://[3fff::1]/",
		// IPv4 inside IPv6.
		"https://[::ffff:127.0.0.1]/",
		"https://[::ffff:7f00:1]/",
		"https://[::ffff:10.0.0.1]/",
		"https://[::ffff:169.254.169.254]/",
		"https://[::ffff:100.64.0.1]/",
		"https://[::127.0.0.1]/", // deprecated IPv4-compatible
		"https://[64:ff9b::7f00:1]/",
		"https://[64:ff9b::a9fe:a9fe]/", // NAT64 of the metadata address
		"https://[2002:7f00:1::1]/",     // 6to4 of 127.0.0.1
		"https://[2002:a00:1::1]/",      // 6to4 of 10.0.0.1
		// Numeric hosts in the inet_aton forms.
		"https://2130706433/",
		"https://0x7f000001/",
		"https://0X7F000001/",
		"https://017700000001/",
		"https://0177.0.0.1/",
		"https://0x7f.0.0.1/",
		"https://0x7f.1/",
		"https://127.1/",
		"https://127.0.1/",
		"https://127.0.0.1./",
		"https://167772161/",  // 10.0.0.1
		"https://3232235777/", // 192.168.1.1
		"https://2852039166/", // 169.254.169.254
		"https://0/",
		"https://0x/",
		// Numeric-looking hosts that are not valid addresses.
		"https://1.2.3.4.5/",
		"https://256.1.1.1/",
		"https://08.1.1.1/",
		"https://4294967296/",
		"https://example.123/",
		// Names.
		"https://localhost/",
		"https://LOCALHOST./",
		"https://app.localhost/",
		"https://internal.example.com/",
		"https://mixed.example.com/",
		"https://mixed6.example.com/",
		"https://mapped.example.com/",
		"https://meta.example.com/",
		"https://meta6.example.com/",
		"https://cgnat.example.com/",
		"https://empty.example.com/",
		"https://nxdomain.example.com/",
	}
	for _, raw := range bad {
		v := Validator{Resolver: testResolver()}
		u, err := v.Validate(context.Background(), raw)
		if err == nil {
			t.Errorf("Validate(%q) = %v, want an error", raw, u)
			continue
		}
		var ce *core.Error
		if !errors.As(err, &ce) || ce.Code != core.CodeValidation || ce.Field != FieldURL {
			t.Errorf("Validate(%q) error = %#v, want VALIDATION_ERROR on %s", raw, err, FieldURL)
		}
		if raw != "" && strings.Contains(ce.Message, raw) {
			// A URL can hold a token; messages reach the dashboard and logs.
			t.Errorf("Validate(%q) message %q echoes the URL", raw, ce.Message)
		}
	}
}

func TestValidateURLAllowPrivate(t *testing.T) {
	r := &fakeResolver{} // knows no names: private mode must not need DNS
	v := Validator{Resolver: r, AllowPrivate: true}
	for _, raw := range []string{
		"https://127.0.0.1:8443/hook",
		"https://[::1]/",
		"https://10.0.0.1/",
		"https://localhost/",
		"https://receiver.internal/",
		"https://2130706433/",
	} {
		if _, err := v.Validate(context.Background(), raw); err != nil {
			t.Errorf("private Validate(%q) = %v, want ok", raw, err)
		}
	}
	// The switch relaxes the address policy only, never the shape of the URL.
	for _, raw := range []string{
		"http://127.0.0.1/",
		"https://user:pw@127.0.0.1/",
		"https:127.0.0.1",
		"https://256.1.1.1/",
	} {
		if _, err := v.Validate(context.Background(), raw); core.CodeOf(err) != core.CodeValidation {
			t.Errorf("private Validate(%q) = %v, want VALIDATION_ERROR", raw, err)
		}
	}
	if n := r.calls.Load(); n != 0 {
		t.Errorf("resolver called %d times in private mode", n)
	}
}

func TestValidateURLDoesNotResolveLiteralsOrLocalhost(t *testing.T) {
	r := testResolver()
	v := Validator{Resolver: r}
	for _, raw := range []string{"https://127.0.0.1/", "https://93.184.216.34/", "https://localhost/", "https://2130706433/"} {
		v.Validate(context.Background(), raw) //nolint:errcheck // only the resolver calls matter
	}
	if n := r.calls.Load(); n != 0 {
		t.Errorf("resolver called %d times for literals and localhost", n)
	}
}

type slowResolver struct{}

func (slowResolver) LookupNetIP(ctx context.Context, _, _ string) ([]netip.Addr, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

func TestValidateURLResolverTimeout(t *testing.T) {
	start := time.Now()
	_, err := Validator{Resolver: slowResolver{}, Timeout: 50 * time.Millisecond}.
		Validate(context.Background(), "https://slow.example.com/")
	if core.CodeOf(err) != core.CodeValidation {
		t.Fatalf("err = %v, want VALIDATION_ERROR", err)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("err = %v, want the deadline as its cause", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("validation took %v despite a 50ms timeout", d)
	}
}

func TestValidateURLDefaultResolver(t *testing.T) {
	// ValidateURL with the real resolver: localhost needs no DNS and is refused either way.
	if _, err := ValidateURL("https://localhost/", false); core.CodeOf(err) != core.CodeValidation {
		t.Errorf("ValidateURL(localhost) = %v, want VALIDATION_ERROR", err)
	}
	if _, err := ValidateURL("https://localhost/", true); err != nil {
		t.Errorf("ValidateURL(localhost, allowPrivate) = %v", err)
	}
	u, err := ValidateURL("https://93.184.216.34/hook", false)
	if err != nil || u.Host != "93.184.216.34" || u.Path != "/hook" {
		t.Errorf("ValidateURL(public IP) = %v, %v", u, err)
	}
}

func TestParseLegacyIPv4(t *testing.T) {
	cases := map[string]string{
		"2130706433":       "127.0.0.1",
		"0x7f000001":       "127.0.0.1",
		"017700000001":     "127.0.0.1",
		"0177.0.0.1":       "127.0.0.1",
		"0x7f.0x0.0x0.0x1": "127.0.0.1",
		"127.1":            "127.0.0.1",
		"127.0.1":          "127.0.0.1",
		"10.1":             "10.0.0.1",
		"192.168.257":      "192.168.1.1",
		"1.2.3.4":          "1.2.3.4",
		"0":                "0.0.0.0",
		"0x":               "0.0.0.0",
		"4294967295":       "255.255.255.255",
		"0xff.0xffffff":    "255.255.255.255",
	}
	for in, want := range cases {
		got, ok := parseLegacyIPv4(in)
		if !ok || got.String() != want {
			t.Errorf("parseLegacyIPv4(%q) = %v, %v; want %s", in, got, ok, want)
		}
	}
	for _, in := range []string{"4294967296", "1.2.3.4.5", "256.1.1.1", "1.256.1.1", "1.2.65536", "1.16777216", "08", "0x1g", "", "1..2", "-1"} {
		if got, ok := parseLegacyIPv4(in); ok {
			t.Errorf("parseLegacyIPv4(%q) = %v, want failure", in, got)
		}
	}
}

func TestIsPublicAddr(t *testing.T) {
	public := []string{"93.184.216.34", "1.1.1.1", "8.8.8.8", "100.63.255.255", "100.128.0.0",
		"172.15.255.255", "172.32.0.0", "198.17.255.255", "198.20.0.0", "223.255.255.255",
		"2606:4700:4700::1111", "2a00:1450:4001::1", "::ffff:8.8.8.8", "64:ff9b::808:808", "2002:808:808::1"}
	for _, s := range public {
		if !IsPublicAddr(netip.MustParseAddr(s)) {
			t.Errorf("IsPublicAddr(%s) = false, want true", s)
		}
	}
	private := []string{"127.0.0.1", "10.1.2.3", "169.254.169.254", "fd00:ec2::254", "::1", "::",
		"::ffff:192.168.0.1", "fe80::1%eth0", "2001:db8::1", "4000::1", "64:ff9b:1::1"}
	for _, s := range private {
		if IsPublicAddr(netip.MustParseAddr(s)) {
			t.Errorf("IsPublicAddr(%s) = true, want false", s)
		}
	}
	if IsPublicAddr(netip.Addr{}) {
		t.Error("IsPublicAddr(zero) = true")
	}
}
