package client

import (
	"context"
	"time"
)

// periodic runs a background writer's work on one goroutine: every interval, and once more
// (final) when closed, so that nothing pending is lost at shutdown. The session archive and
// the last-login batches use it.
type periodic struct {
	stop chan struct{}
	done chan struct{}
}

// start runs work every interval until close. Each round gets 30 s, the final one 10 s.
func (p *periodic) start(every time.Duration, work func(ctx context.Context, final bool)) {
	p.stop, p.done = make(chan struct{}), make(chan struct{})
	go func() {
		defer close(p.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				work(ctx, true)
				cancel()
				return
			case <-t.C:
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				work(ctx, false)
				cancel()
			}
		}
	}()
}

// close runs the final round and waits for it; it does nothing if start never ran.
func (p *periodic) close() {
	if p.stop == nil {
		return
	}
	close(p.stop)
	<-p.done
}
