package testenv

import (
	"bytes"
	"sync"
)

// LogBuffer collects what a logger under test or a child process writes, from any
// goroutine (a slog text handler over it, or exec's copier of a process's output), and
// can be read meanwhile.
type LogBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LogBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String answers everything written so far.
func (b *LogBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
