package wire

import (
	"strings"
	"sync"
)

// Peer is the transport's writer of one socket: all the realtime wing needs of a
// connection.
type Peer interface {
	// Send queues a text frame. It answers false when the socket is gone or too slow to
	// keep up (the transport then closes it): a send never blocks.
	Send(msg []byte) bool
	// SendShared queues a text frame that goes to many sockets (a broadcast): the
	// transport may encode it once for all of them (Shared.Prepared). Same answer as Send.
	SendShared(f *Shared) bool
	// Close sends a close frame with d's code and reason after the queued frames, then
	// ends the socket. Calling it again does nothing.
	Close(d Disconnect)
}

// Shared is one message delivered to many sockets of this node.
type Shared struct {
	Msg []byte

	once     sync.Once
	prepared any
}

// Prepared answers the transport's encoded form of the message, made by prepare the first
// time it is asked for: one encoding for every socket that gets it.
func (f *Shared) Prepared(prepare func(msg []byte) any) any {
	f.once.Do(func() { f.prepared = prepare(f.Msg) })
	return f.prepared
}

func toValidUTF8(s string) string { return strings.ToValidUTF8(s, "") }
