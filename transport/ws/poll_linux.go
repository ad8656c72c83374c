//go:build linux

package ws

import (
	"errors"
	"os"
	"sync"
	"syscall"
)

// readPoller waits for every idle socket of the node to become readable in one epoll
// instance of its own, so that an idle socket holds no reader goroutine (a goroutine's
// 2 KiB stack and its descriptor were most of what an idle socket cost the node's
// memory): when a socket is readable, a goroutine starts that reads what came (Conn.
// readPolled) and ends once the read buffer is empty, having armed the socket again.
//
// Each socket is registered level-triggered and one-shot (EPOLLONESHOT): it is reported
// once, then not again until its reader re-arms it, and data that came meanwhile is
// reported at once on the re-arm. The instance is itself waited on through the runtime's
// poller (it is readable when a socket is ready): no thread blocks in epoll_wait. It
// exists while sockets are registered; its goroutine ends when the last one leaves.
//
// Sockets are named in the instance by a number that is never reused (not by their
// descriptor, which a closed socket's successor may take), and looked up in conns: a
// socket that left is not reported. A socket's registration ends with its descriptor
// (the kernel drops a closed file from every instance), and its descriptor is used
// only under socketConn.useFd.
type readPoller struct {
	mu    sync.Mutex
	file  *os.File // the epoll instance; nil while no socket is registered
	epfd  int
	conns map[uint64]*Conn
	next  uint64
	// panicked reports a panic of the poller's goroutine.
	panicked func(v any)
}

// canPollReads: sockets wait for data in the node's readPoller here.
const canPollReads = true

func newReadPoller(panicked func(v any)) *readPoller { return &readPoller{panicked: panicked} }

// pollEvents is what a socket waits for: data, the peer's end, or an error (EPOLLERR and
// EPOLLHUP are reported always), once.
const pollEvents = syscall.EPOLLIN | syscall.EPOLLRDHUP | syscall.EPOLLONESHOT

func pollEvent(id uint64) syscall.EpollEvent {
	// EpollEvent's Fd and Pad are the kernel's 64-bit data.
	return syscall.EpollEvent{Events: pollEvents, Fd: int32(uint32(id)), Pad: int32(uint32(id >> 32))}
}

func pollID(ev *syscall.EpollEvent) uint64 { return uint64(uint32(ev.Fd)) | uint64(uint32(ev.Pad))<<32 }

// register has p reported when fd is readable; its answer names p in the poller.
// The caller holds fd (socketConn.useFd).
func (g *readPoller) register(p *Conn, fd int32) (uint64, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.file == nil {
		epfd, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
		if err != nil {
			return 0, os.NewSyscallError("epoll_create1", err)
		}
		if err := syscall.SetNonblock(epfd, true); err != nil {
			_ = syscall.Close(epfd)
			return 0, os.NewSyscallError("setnonblock", err)
		}
		f := os.NewFile(uintptr(epfd), "ws-read-poller")
		raw, err := f.SyscallConn()
		if err != nil {
			_ = f.Close()
			return 0, err
		}
		g.file, g.epfd, g.conns = f, epfd, make(map[uint64]*Conn)
		go g.run(raw)
	}
	g.next++
	id := g.next
	ev := pollEvent(id)
	if err := syscall.EpollCtl(g.epfd, syscall.EPOLL_CTL_ADD, int(fd), &ev); err != nil {
		g.closeIfEmpty()
		return 0, os.NewSyscallError("epoll_ctl", err)
	}
	g.conns[id] = p
	return id, nil
}

// rearm has the socket id reported again when fd is readable (at once if it is). The
// caller holds fd (socketConn.useFd).
func (g *readPoller) rearm(id uint64, fd int32) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.conns[id] == nil {
		return errors.New("ws: the socket left the read poller")
	}
	ev := pollEvent(id)
	return os.NewSyscallError("epoll_ctl", syscall.EpollCtl(g.epfd, syscall.EPOLL_CTL_MOD, int(fd), &ev))
}

// unregister forgets the socket id (its descriptor is closed: the kernel dropped it).
func (g *readPoller) unregister(id uint64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.conns, id)
	g.closeIfEmpty()
}

// closeIfEmpty closes the instance once no socket is registered (its goroutine ends);
// g.mu is held.
func (g *readPoller) closeIfEmpty() {
	if g.file != nil && len(g.conns) == 0 {
		_ = g.file.Close()
		g.file, g.conns = nil, nil
	}
}

// registered answers how many sockets wait in the poller (tests).
func (g *readPoller) registered() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.conns)
}

// run is the poller's goroutine: it waits for ready sockets and starts their reading,
// until the instance is closed.
func (g *readPoller) run(raw syscall.RawConn) {
	defer func() {
		if v := recover(); v != nil && g.panicked != nil {
			g.panicked(v)
		}
	}()
	events := make([]syscall.EpollEvent, 128)
	ready := make([]*Conn, 0, len(events))
	for {
		n := 0
		var waitErr error
		err := raw.Read(func(fd uintptr) bool {
			var err error
			n, err = syscall.EpollWait(int(fd), events, 0)
			switch {
			case err == syscall.EINTR:
				n = 0
				return false
			case err != nil:
				n, waitErr = 0, err
				return true
			}
			return n > 0 // none ready: the runtime's poller waits for the instance
		})
		if err != nil || waitErr != nil {
			return // closed: no socket is registered any more
		}
		g.mu.Lock()
		for i := range events[:n] {
			if p := g.conns[pollID(&events[i])]; p != nil {
				ready = append(ready, p)
			}
		}
		g.mu.Unlock()
		for i, p := range ready {
			p.readable()
			ready[i] = nil
		}
		ready = ready[:0]
	}
}
