package ws

import (
	"syscall"
	"unsafe"
)

// canSendNow: sendNow works here.
const canSendNow = true

// sendNow sends what the socket fd takes of b at once (send(2) rather than write(2): a
// socket's own call, shorter in the kernel; MSG_NOSIGNAL: a closed socket answers EPIPE
// without a signal).
func sendNow(fd uintptr, b []byte) (int, error) {
	if len(b) == 0 {
		return 0, nil
	}
	for {
		n, _, errno := syscall.Syscall6(syscall.SYS_SENDTO, fd, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)),
			syscall.MSG_NOSIGNAL|syscall.MSG_DONTWAIT, 0, 0)
		switch errno {
		case 0:
			return int(n), nil
		case syscall.EINTR:
			continue
		case syscall.EAGAIN:
			return 0, nil
		}
		return 0, errno
	}
}
