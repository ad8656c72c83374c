//go:build linux

package main

import (
	"syscall"

	"golang.org/x/sys/unix"
)

// bindNoPort is a dialer's Control for a socket bound to a source address: its port is
// chosen at connect(2), by the whole four-tuple, not at bind(2) among the address's
// ports that no socket holds (IP_BIND_ADDRESS_NO_PORT). Runs back to back leave tens of
// thousands of the client's ports in TIME_WAIT; bind(2) then searched the port range
// for each socket, and a server measured right after another run's close waited on its
// client (an opening twice as long with the same server CPU), where connect(2) reuses a
// loopback TIME_WAIT port (net.ipv4.tcp_tw_reuse).
func bindNoPort(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
	}); err != nil {
		return err
	}
	return serr
}
