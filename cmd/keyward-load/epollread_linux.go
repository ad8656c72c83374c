//go:build linux

package main

import (
	"encoding/binary"
	"errors"
	"net"
	"syscall"

	"github.com/gorilla/websocket"
)

// readEpoll reads every socket of the fan-out child in one epoll loop, on one goroutine,
// until quit closes: a delivery costs the child a read(2) and the parsing of a frame,
// not the wake-up of a goroutine per socket. With a goroutine each, the readers spent
// 11-12 µs of CPU a delivery, all on the one core they have: about 6 ms to read a
// broadcast to 500 sockets, most of its p99, whatever the server. It answers false when
// a socket is not a plain TCP connection (the caller starts a reader per socket then).
// The sockets are read here only: nothing else reads their connections.
func readEpoll(conns []*websocket.Conn, proto string, t *tally, quit <-chan struct{}) bool {
	socks := make([]*rawSocket, len(conns))
	for i, c := range conns {
		tc, ok := c.UnderlyingConn().(*net.TCPConn)
		if !ok {
			return false
		}
		raw, err := tc.SyscallConn()
		if err != nil {
			return false
		}
		fd := -1
		_ = raw.Control(func(f uintptr) { fd = int(f) })
		if fd < 0 {
			return false
		}
		socks[i] = &rawSocket{fd: fd, buf: make([]byte, 0, 4096), r: broadcastReader{proto: proto, t: t}}
	}
	epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return false
	}
	for i, s := range socks {
		ev := syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLRDHUP, Fd: int32(i)}
		if err := syscall.EpollCtl(epfd, syscall.EPOLL_CTL_ADD, s.fd, &ev); err != nil {
			_ = syscall.Close(epfd)
			return false
		}
	}
	go func() {
		defer syscall.Close(epfd)
		events := make([]syscall.EpollEvent, 256)
		for {
			select {
			case <-quit:
				return
			default:
			}
			n, err := syscall.EpollWait(epfd, events, 100)
			if errors.Is(err, syscall.EINTR) {
				continue
			}
			if err != nil {
				return
			}
			for _, ev := range events[:n] {
				if s := socks[ev.Fd]; !s.read() {
					_ = syscall.EpollCtl(epfd, syscall.EPOLL_CTL_DEL, s.fd, nil)
				}
			}
		}
	}()
	return true
}

// rawSocket is one socket read by readEpoll: what came and is not yet a whole frame, and
// the message its fragments make.
type rawSocket struct {
	fd  int
	buf []byte
	msg []byte
	r   broadcastReader
}

// read reads what the socket has and handles its whole frames; false once it ended.
func (s *rawSocket) read() bool {
	for {
		if len(s.buf) == cap(s.buf) {
			s.buf = append(s.buf, make([]byte, cap(s.buf))...)[:len(s.buf)]
		}
		n, err := syscall.Read(s.fd, s.buf[len(s.buf):cap(s.buf)])
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
			return true
		}
		if err != nil || n == 0 {
			return false
		}
		s.buf = s.buf[:len(s.buf)+n]
		if !s.frames() {
			return false
		}
		if len(s.buf) < cap(s.buf) {
			return true // drained: level-triggered, epoll says when more comes
		}
	}
}

// frames handles the whole frames read (RFC 6455 5.2: a server's are not masked); false
// once a close frame came.
func (s *rawSocket) frames() bool {
	b := s.buf
	defer func() { s.buf = s.buf[:copy(s.buf, b)] }()
	for len(b) >= 2 {
		fin, op, masked, size, head := b[0]&0x80 != 0, b[0]&0x0f, b[1]&0x80 != 0, int(b[1]&0x7f), 2
		switch size {
		case 126:
			if len(b) < 4 {
				return true
			}
			size, head = int(binary.BigEndian.Uint16(b[2:])), 4
		case 127:
			if len(b) < 10 {
				return true
			}
			size, head = int(binary.BigEndian.Uint64(b[2:])), 10
		}
		var key []byte
		if masked {
			if len(b) < head+4 {
				return true
			}
			key, head = b[head:head+4], head+4
		}
		if len(b) < head+size {
			return true
		}
		payload := b[head : head+size]
		for i := range key {
			for j := i; j < len(payload); j += 4 {
				payload[j] ^= key[i]
			}
		}
		b = b[head+size:]
		switch op {
		case websocket.PingMessage:
			s.write(websocket.PongMessage, payload)
		case websocket.CloseMessage:
			return false
		case websocket.TextMessage, websocket.BinaryMessage, 0: // 0: a continuation
			if fin && len(s.msg) == 0 {
				s.handle(payload)
				continue
			}
			s.msg = append(s.msg, payload...)
			if fin {
				s.handle(s.msg)
				s.msg = s.msg[:0]
			}
		}
	}
	return true
}

func (s *rawSocket) handle(msg []byte) {
	if s.r.message(msg) {
		s.write(websocket.TextMessage, []byte("{}"))
	}
}

// write sends a short frame, masked (a client's must be) with a zero key.
func (s *rawSocket) write(op byte, payload []byte) {
	if len(payload) > 125 {
		return // control frames and {} only
	}
	frame := append([]byte{0x80 | op, 0x80 | byte(len(payload)), 0, 0, 0, 0}, payload...)
	_, _ = syscall.Write(s.fd, frame)
}
