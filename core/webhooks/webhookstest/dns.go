// Package webhookstest holds test helpers for the webhook destination policy: a fake DNS
// server on loopback that stands in for an attacker's name server rebinding a name to a
// private address, so the dial-time check is tested through a resolver seam
// (webhooks.Config.Resolver), not a package-level variable.
package webhookstest

import (
	"context"
	"encoding/binary"
	"net"
	"net/netip"
	"sync/atomic"
	"testing"
)

// StartFakeDNS answers every A query with addr and every other query with no records. It
// answers the resolver to give webhooks.Config.Resolver and a count of the queries
// answered. The server stops at the end of the test.
func StartFakeDNS(t testing.TB, addr netip.Addr) (*net.Resolver, *atomic.Int32) {
	t.Helper()
	pc, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	var queries atomic.Int32
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return // closed at cleanup
			}
			if resp := answer(buf[:n], addr); resp != nil {
				queries.Add(1)
				pc.WriteTo(resp, from)
			}
		}
	}()
	server := pc.LocalAddr().String()
	return &net.Resolver{
		PreferGo: true,
		Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "udp4", server)
		},
	}, &queries
}

// answer builds the response to query q (RFC 1035 4.1): the header with QR, AA, RD
// copied and RA set, the question echoed, and one A record when asked for one.
func answer(q []byte, addr netip.Addr) []byte {
	if len(q) < 12 {
		return nil
	}
	i := 12
	for i < len(q) && q[i] != 0 {
		i += int(q[i]) + 1
	}
	i++ // the root label
	if i+4 > len(q) {
		return nil
	}
	qtype := binary.BigEndian.Uint16(q[i:])
	question := q[12 : i+4]
	answers := uint16(0)
	if qtype == 1 { // A
		answers = 1
	}
	resp := []byte{q[0], q[1], 0x84 | q[2]&0x01, 0x80, 0, 1, 0, byte(answers), 0, 0, 0, 0}
	resp = append(resp, question...)
	if answers == 1 {
		a4 := addr.As4()
		resp = append(resp, 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 0, 0, 4)
		resp = append(resp, a4[:]...)
	}
	return resp
}
