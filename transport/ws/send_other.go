//go:build !linux

package ws

import "errors"

// canSendNow: elsewhere than Linux a socket's frames are all written through the
// runtime's poller (newSocketConn keeps no descriptor, so tryWrite never sends).
const canSendNow = false

func sendNow(uintptr, []byte) (int, error) {
	return 0, errors.New("ws: no direct send on this system")
}
