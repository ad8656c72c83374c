package supervise

import (
	"fmt"
	"runtime/debug"
	"sync"
)

// Group runs the short-lived goroutines of one call (a batch of webhook sends, parallel
// reads) and waits for them. A panic in one does not end the process: the first is carried
// to Wait's caller and raised again there, so that whatever owns the call (a supervised
// goroutine, a request's recovery) logs and counts it. The zero value is ready to use.
type Group struct {
	wg       sync.WaitGroup
	mu       sync.Mutex
	panicked *PanicError
}

// Go runs fn on a goroutine of the group.
func (g *Group) Go(fn func()) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		defer func() {
			if r := recover(); r != nil {
				g.mu.Lock()
				if g.panicked == nil {
					g.panicked = &PanicError{Kind: "group", Value: r, Stack: string(debug.Stack())}
				}
				g.mu.Unlock()
			}
		}()
		fn()
	}()
}

// Wait waits for every goroutine of the group, then panics with the first panic of one,
// if any (its value and stack in the message).
func (g *Group) Wait() {
	g.wg.Wait()
	g.mu.Lock()
	p := g.panicked
	g.mu.Unlock()
	if p != nil {
		panic(fmt.Sprintf("%v\n\n(in a goroutine of the call)\n%s", p.Value, p.Stack))
	}
}
