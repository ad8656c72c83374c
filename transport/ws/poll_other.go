//go:build !linux

package ws

import "errors"

// canPollReads: elsewhere than Linux each socket's reader waits in a goroutine of its own.
const canPollReads = false

type readPoller struct{}

func newReadPoller(func(v any)) *readPoller { return nil }

func (*readPoller) register(*Conn, int32) (uint64, error) {
	return 0, errors.New("ws: no read poller on this system")
}

func (*readPoller) rearm(uint64, int32) error { return errors.New("ws: no read poller on this system") }

func (*readPoller) unregister(uint64) {}

func (*readPoller) registered() int { return 0 }
