package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/cluster/internal/fanout"
)

// The bus is Redis PUBLISH/SUBSCRIBE on the channels <prefix>bus:<topic>. An engine holds
// one subscriber connection (a go-redis PubSub), opened by the first Subscribe and shared by
// all its subscriptions: the channel is subscribed in Redis while the engine has at least
// one subscriber of the topic. A receive loop reads the connection and hands messages to a
// fanout, whose goroutine calls the subscribers; both goroutines are stopped by Close.
//
// go-redis reconnects the PubSub after a connection error and subscribes again to the
// channels it holds; messages published in between are lost, which the Bus contract allows.
// A connection that goes silent (a frozen Redis, a dead peer that sends no reset) is found
// by pinging it after busQuiet without traffic: no answer within busPongWait, and the loop
// lets go-redis drop it and connect again.
const (
	busQuiet     = 5 * time.Second
	busPongWait  = 3 * time.Second
	busRetryMax  = time.Second            // longest pause between failed receive attempts
	busUnsubWait = 5 * time.Second        // bounds the UNSUBSCRIBE write of an unsubscribe
	confirmRetry = 500 * time.Millisecond // Subscribe pings again this often while waiting
)

// errClosed answers Subscribe after Close; the other methods get go-redis's "client is
// closed", which wrap also reports as unavailability.
var errClosed = fmt.Errorf("cluster/redis: engine closed: %w", cluster.ErrUnavailable)

// busConn is the engine's subscriber connection and the goroutines reading it.
type busConn struct {
	ps     *goredis.PubSub
	fan    *fanout.Fanout
	refs   map[string]int // topic → local subscribers; guarded by Engine.busMu
	ctx    context.Context
	cancel context.CancelFunc // stops the receive loop, with ps.Close
	done   chan struct{}      // closed when the receive loop has returned
}

// waiter is a Subscribe waiting for the PONG that proves its SUBSCRIBE was processed.
type waiter struct {
	ch   chan struct{}
	once sync.Once
}

func (w *waiter) wake() { w.once.Do(func() { close(w.ch) }) }

func (e *Engine) channel(topic string) string { return e.prefix + "bus:" + topic }

// Publish implements cluster.Bus with PUBLISH. Redis delivers to the subscribers connected
// at that moment, in the order it runs the PUBLISH commands, so one publisher's messages keep
// their order.
func (e *Engine) Publish(ctx context.Context, topic string, payload []byte) error {
	if err := checkName("publish", "topic", topic); err != nil {
		return err
	}
	if payload == nil {
		payload = []byte{}
	}
	ch := e.channel(topic)
	if cc, ok := e.client.(*goredis.ClusterClient); ok {
		// On a Redis Cluster any node takes a PUBLISH and forwards it to every other node
		// over the cluster bus, but go-redis would send each one to a random node, and two
		// messages sent through different nodes can overtake each other. One node per
		// channel (the master of the channel name's hash slot, as if it were a key) keeps a
		// publisher's order while the slot map stays the same.
		node, err := cc.MasterForKey(ctx, ch)
		if err != nil {
			return e.wrap(ctx, "publish", err)
		}
		return e.wrap(ctx, "publish", node.Publish(ctx, ch, payload).Err())
	}
	return e.wrap(ctx, "publish", e.client.Publish(ctx, ch, payload).Err())
}

// Subscribe implements cluster.Bus. It returns once Redis has processed the SUBSCRIBE: a
// PING written after it on the same connection has been answered. fn is called by the
// engine's fanout goroutine, never before Subscribe succeeds.
func (e *Engine) Subscribe(ctx context.Context, topic string, fn func(payload []byte)) (func(), error) {
	if err := checkName("subscribe", "topic", topic); err != nil {
		return nil, err
	}
	if fn == nil {
		return nil, errors.New("cluster/redis: subscribe: nil callback")
	}
	e.busMu.Lock()
	if e.closed {
		e.busMu.Unlock()
		return nil, errClosed
	}
	if e.bus == nil {
		e.bus = e.startBus()
	}
	b := e.bus
	s := b.fan.Add(topic, fn, false)
	var err error
	if b.refs[topic] == 0 {
		// go-redis remembers the channel even when the write fails, and subscribes to it
		// again on its next connection; the unsubscribe below makes it forget.
		err = b.ps.Subscribe(ctx, e.channel(topic))
	}
	b.refs[topic]++
	e.busMu.Unlock()

	var once sync.Once
	unsubscribe := func() { once.Do(func() { e.unsubscribe(b, topic, s) }) }
	if err == nil {
		err = e.confirm(ctx, b)
	}
	if err != nil {
		unsubscribe()
		if errors.Is(err, errClosed) {
			return nil, err
		}
		return nil, e.wrap(ctx, "subscribe", err)
	}
	s.Activate()
	return unsubscribe, nil
}

func (e *Engine) unsubscribe(b *busConn, topic string, s *fanout.Subscriber) {
	b.fan.Remove(topic, s)
	e.busMu.Lock()
	defer e.busMu.Unlock()
	b.refs[topic]--
	if b.refs[topic] > 0 {
		return
	}
	delete(b.refs, topic)
	if e.closed {
		return // the connection is gone with every subscription
	}
	// A failed write is not retried: go-redis has already forgotten the channel, and the
	// failure makes it replace the connection, so the new one is not subscribed.
	ctx, cancel := context.WithTimeout(context.Background(), busUnsubWait)
	defer cancel()
	_ = b.ps.Unsubscribe(ctx, e.channel(topic))
}

// confirm waits until Redis answers a PING sent on the subscriber connection after the
// caller's SUBSCRIBE: commands on one connection run in order, so the subscription is then
// active. When the connection is replaced meanwhile, go-redis subscribes the new one to
// every channel before writing anything else, and a PING is lost with the old one, so
// confirm pings again every confirmRetry until one is answered or e.busWait has passed.
func (e *Engine) confirm(ctx context.Context, b *busConn) error {
	w := &waiter{ch: make(chan struct{})}
	var tokens []string
	defer func() {
		e.waitMu.Lock()
		for _, t := range tokens {
			delete(e.waiters, t)
		}
		e.waitMu.Unlock()
	}()
	giveUp := time.NewTimer(e.busWait)
	defer giveUp.Stop()
	retry := time.NewTicker(confirmRetry)
	defer retry.Stop()
	var lastErr error
	for {
		token := randomToken()
		e.waitMu.Lock()
		e.waiters[token] = w
		e.waitMu.Unlock()
		tokens = append(tokens, token)
		if err := b.ps.Ping(ctx, token); err != nil {
			lastErr = err
		}
		select {
		case <-w.ch:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		case <-b.ctx.Done():
			return errClosed
		case <-giveUp.C:
			if lastErr != nil {
				return fmt.Errorf("subscription not confirmed within %v: %w", e.busWait, lastErr)
			}
			return fmt.Errorf("subscription not confirmed within %v", e.busWait)
		case <-retry.C:
		}
	}
}

func randomToken() string {
	b := make([]byte, 12)
	_, _ = rand.Read(b)
	return "kw-sub-" + hex.EncodeToString(b)
}

// startBus creates the subscriber connection (go-redis dials it on first use) and starts
// the receive loop and the fanout. e.busMu must be held.
func (e *Engine) startBus() *busConn {
	ctx, cancel := context.WithCancel(context.Background())
	b := &busConn{
		ps:     e.client.Subscribe(ctx),
		fan:    fanout.New(),
		refs:   make(map[string]int),
		ctx:    ctx,
		cancel: cancel,
		done:   make(chan struct{}),
	}
	go e.receive(b)
	return b
}

// stopBus stops the receive loop and the fanout and waits for both. Subscribe fails with
// errClosed afterwards.
func (e *Engine) stopBus() {
	e.busMu.Lock()
	e.closed = true
	b := e.bus
	e.busMu.Unlock()
	if b == nil {
		return
	}
	b.cancel()
	// Closing the connection ends a read in progress; go-redis answers every later call on
	// the PubSub with an error.
	_ = b.ps.Close()
	<-b.done
	b.fan.Close()
}

// receive reads the subscriber connection until stopBus: messages go to the fanout, PONGs
// to the Subscribe waiting for them.
func (e *Engine) receive(b *busConn) {
	defer close(b.done)
	prefix := e.channel("")
	var pingSent time.Time // when a health ping went unanswered so far; zero when none
	failures := 0
	for b.ctx.Err() == nil {
		var msg any
		var err error
		if pingSent.IsZero() {
			// A read timeout here is only quiet, not a broken connection.
			msg, err = b.ps.ReceiveTimeout(b.ctx, busQuiet)
		} else {
			// A health ping is out. A deadline from the context, not a timeout argument,
			// makes go-redis count a timeout as a broken connection and drop it.
			ctx, cancel := context.WithDeadline(b.ctx, pingSent.Add(busPongWait))
			msg, err = b.ps.ReceiveTimeout(ctx, 0)
			cancel()
		}
		if b.ctx.Err() != nil {
			return
		}
		if err != nil {
			var ne net.Error
			if pingSent.IsZero() && errors.As(err, &ne) && ne.Timeout() {
				ctx, cancel := context.WithTimeout(b.ctx, busPongWait)
				if b.ps.Ping(ctx) == nil {
					pingSent = time.Now()
				}
				cancel()
				continue
			}
			// The connection failed (or could not be made): go-redis has dropped it, and the
			// next receive dials again and resubscribes. Retry at once the first time (a
			// connection Redis closed while idle), then back off.
			pingSent = time.Time{}
			failures++
			if failures > 1 {
				pause := min(busRetryMax, 50*time.Millisecond<<min(failures-2, 5))
				t := time.NewTimer(pause)
				select {
				case <-b.ctx.Done():
					t.Stop()
					return
				case <-t.C:
				}
			}
			continue
		}
		failures = 0
		pingSent = time.Time{} // anything received proves the connection alive
		switch m := msg.(type) {
		case *goredis.Message:
			if topic, ok := strings.CutPrefix(m.Channel, prefix); ok {
				b.fan.Deliver(topic, []byte(m.Payload))
			}
		case *goredis.Pong:
			e.waitMu.Lock()
			w := e.waiters[m.Payload]
			delete(e.waiters, m.Payload)
			e.waitMu.Unlock()
			if w != nil {
				w.wake()
			}
		}
	}
}

// BusDropped answers how many bus messages were dropped because this node's subscribers
// fell behind (the fan-out's queue was full).
func (e *Engine) BusDropped() uint64 {
	e.busMu.Lock()
	defer e.busMu.Unlock()
	if e.bus == nil {
		return 0
	}
	return e.bus.fan.Dropped()
}
