package redis

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/fnv"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/cluster/internal/fanout"
	"github.com/keyward/keyward/internal/supervise"
)

// The bus is Redis Pub/Sub. On one server or a Sentinel group it is classic
// PUBLISH/SUBSCRIBE on the channels <prefix>bus:<topic>; on a Redis Cluster older than
// Redis 7 too, with every channel in one hash slot, <prefix>bus:{0}:<topic>, so that
// publisher and subscribers meet on that slot's master (Publish says why). On a Redis
// Cluster of Redis 7 or later it is sharded SPUBLISH/SSUBSCRIBE, which keeps a
// message within the shard (master and replicas) of its channel's hash slot instead of
// broadcasting it to every node of the cluster. A sharded subscription must be made on the
// node serving the channel's slot, and one SSUBSCRIBE may name channels of one slot only,
// so there the topics are spread over busBuckets hash tags, <prefix>bus:{N}:<topic> with N
// a hash of the topic: one subscriber connection per bucket in use, whatever the number of
// topics (per-app topics come and go with the app's sockets on the node).
//
// An engine holds one subscriber connection (a go-redis PubSub) per bucket (a single one
// in the classic case), opened by the first Subscribe of a topic of the bucket and shared
// by all its subscriptions: the channel is subscribed in Redis while the engine has at
// least one subscriber of the topic. On a Redis Cluster a bucket's connection is closed
// when its last topic is unsubscribed (a connection without channels would be dialled to
// any node on its next reconnect). A receive loop per connection reads it and hands messages to one
// fanout, whose goroutine calls the subscribers; all are stopped by Close.
//
// go-redis reconnects a PubSub after a connection error and subscribes again to the
// channels it holds (a sharded one on the node that serves their slot); messages published
// in between are lost, which the Bus contract allows. A connection that goes silent (a
// frozen Redis, a dead peer that sends no reset) is found by pinging it after busQuiet
// without traffic: no answer within busPongWait, and the loop lets go-redis drop it and
// connect again. When a Redis Cluster moves a slot or fails over its master, the node that
// lost it ends the sharded subscriptions on it (an SUNSUBSCRIBE we did not ask for, or an
// error reply to a subscription): the loop then has the slot map reloaded and opens a new
// connection subscribed to the bucket's channels.
const (
	busQuiet     = 5 * time.Second
	busPongWait  = 3 * time.Second
	busRetryMax  = time.Second            // longest pause between failed receive attempts
	busUnsubWait = 5 * time.Second        // bounds the UNSUBSCRIBE write of an unsubscribe
	confirmRetry = 500 * time.Millisecond // Subscribe pings again this often while waiting
	busBuckets   = 16                     // hash tags of sharded channels
)

// errClosed answers Subscribe after Close; the other methods get go-redis's "client is
// closed", which wrap also reports as unavailability.
var errClosed = fmt.Errorf("cluster/redis: engine closed: %w", cluster.ErrUnavailable)

// busConn is one subscriber connection of the engine and the goroutine reading it.
type busConn struct {
	bucket int
	// ps is replaced by the receive loop when a Redis Cluster ended the subscriptions on
	// it; guarded by Engine.busMu.
	ps     *goredis.PubSub
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

// bucket answers the bucket of topic: always 0 with classic Pub/Sub.
func (e *Engine) bucket(topic string) int {
	if !e.sharded {
		return 0
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(topic))
	return int(h.Sum32() % busBuckets)
}

// channelPrefix is what the channels of a bucket start with, before the topic. On a Redis
// Cluster every channel has its bucket's hash tag, the one bucket {0} with classic Pub/Sub.
func (e *Engine) channelPrefix(bucket int) string {
	if !e.cluster {
		return e.prefix + "bus:"
	}
	return e.prefix + "bus:{" + strconv.Itoa(bucket) + "}:"
}

func (e *Engine) channel(topic string) string { return e.channelPrefix(e.bucket(topic)) + topic }

// hasShardedPubSub answers whether the cluster's servers know SPUBLISH (Redis 7 or later),
// asking the node that serves the slot of a bus channel.
func (e *Engine) hasShardedPubSub(ctx context.Context) (bool, error) {
	cc := e.client.(*goredis.ClusterClient)
	node, err := cc.MasterForKey(ctx, e.prefix+"bus:{0}:")
	if err != nil {
		return false, err
	}
	// COMMAND INFO answers one entry per name asked, nil for a command the server lacks.
	info, err := node.Do(ctx, "command", "info", "spublish").Slice()
	if err != nil {
		return false, err
	}
	return len(info) == 1 && info[0] != nil, nil
}

// reloadSlots has a cluster client fetch the slot map again (in the background).
func (e *Engine) reloadSlots(ctx context.Context) {
	if cc, ok := e.client.(*goredis.ClusterClient); ok {
		cc.ReloadState(ctx)
	}
}

// Publish implements cluster.Bus with PUBLISH (SPUBLISH when sharded). Redis delivers to
// the subscribers connected at that moment, in the order it runs the PUBLISH commands, so
// one publisher's messages keep their order.
func (e *Engine) Publish(ctx context.Context, topic string, payload []byte) error {
	if err := checkName("publish", "topic", topic); err != nil {
		return err
	}
	if payload == nil {
		payload = []byte{}
	}
	ch := e.channel(topic)
	if e.sharded {
		// Routed by the channel's slot like a key, following the cluster's redirections.
		return e.wrap(ctx, "publish", e.client.SPublish(ctx, ch, payload).Err())
	}
	if cc, ok := e.client.(*goredis.ClusterClient); ok {
		// On a Redis Cluster any node takes a PUBLISH and forwards it to every other node
		// over the cluster bus, but go-redis would send each one to a random node, and two
		// messages sent through different nodes can overtake each other, or reach a
		// subscriber after an UNSUBSCRIBE and SUBSCRIBE that were made later. Every channel
		// has the hash tag {0}: its PUBLISH goes to that slot's master, the node the
		// subscriber connection is dialled to (go-redis picks the master of its channels'
		// slot), so both meet on one node as on a single server.
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
	if e.fan == nil {
		e.fan = fanout.New(e.goroutines)
	}
	bucket := e.bucket(topic)
	b := e.buses[bucket]
	if b == nil {
		b = e.startBus(bucket)
		e.buses[bucket] = b
	}
	s := e.fan.Add(topic, fn, false)
	var err error
	if b.refs[topic] == 0 {
		// go-redis remembers the channel even when the write fails, and subscribes to it
		// again on its next connection; the unsubscribe below makes it forget.
		err = e.subscribeChannels(ctx, b.ps, e.channel(topic))
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

// subscribeChannels sends SUBSCRIBE, or SSUBSCRIBE when sharded, on ps.
func (e *Engine) subscribeChannels(ctx context.Context, ps *goredis.PubSub, channels ...string) error {
	if e.sharded {
		return ps.SSubscribe(ctx, channels...)
	}
	return ps.Subscribe(ctx, channels...)
}

func (e *Engine) unsubscribe(b *busConn, topic string, s *fanout.Subscriber) {
	e.fan.Remove(topic, s)
	e.busMu.Lock()
	b.refs[topic]--
	if b.refs[topic] > 0 {
		e.busMu.Unlock()
		return
	}
	delete(b.refs, topic)
	if e.closed {
		e.busMu.Unlock()
		return // the connections are gone with every subscription
	}
	if e.cluster && len(b.refs) == 0 {
		// The bucket's last topic: close its connection rather than keep one without
		// channels, which go-redis would dial to any node.
		if e.buses[b.bucket] == b {
			delete(e.buses, b.bucket)
		}
		ps := b.ps
		e.busMu.Unlock()
		b.stop(ps)
		return
	}
	defer e.busMu.Unlock()
	// A failed write is not retried: go-redis has already forgotten the channel, and the
	// failure makes it replace the connection, so the new one is not subscribed.
	ctx, cancel := context.WithTimeout(context.Background(), busUnsubWait)
	defer cancel()
	if e.sharded {
		_ = b.ps.SUnsubscribe(ctx, e.channel(topic))
	} else {
		_ = b.ps.Unsubscribe(ctx, e.channel(topic))
	}
}

// pubsub answers b's current connection.
func (e *Engine) pubsub(b *busConn) *goredis.PubSub {
	e.busMu.Lock()
	defer e.busMu.Unlock()
	return b.ps
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
		if err := e.pubsub(b).Ping(ctx, token); err != nil {
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

// startBus creates the subscriber connection of bucket (go-redis dials it on first use:
// the caller subscribes at once, so on a cluster it is dialled to the node of its channel)
// and starts its receive loop. e.busMu must be held.
func (e *Engine) startBus(bucket int) *busConn {
	ctx, cancel := context.WithCancel(context.Background())
	b := &busConn{
		bucket: bucket,
		ps:     e.newPubSub(ctx),
		refs:   make(map[string]int),
		ctx:    ctx,
		cancel: cancel,
		done:   make(chan struct{}),
	}
	e.busWG.Add(1)
	var once sync.Once
	end := func() { once.Do(func() { close(b.done); e.busWG.Done() }) }
	// receive returns only once b is stopped (b.ctx); a panic in it is logged and counted
	// by the owner, which runs it again on the same connection.
	if err := e.goroutines.Go("cluster-bus-receive", supervise.Restart, func(ctx context.Context) error {
		defer context.AfterFunc(ctx, b.cancel)()
		e.receive(b)
		end()
		return nil
	}); err != nil {
		b.cancel() // the owner is stopping: the connection gets no messages
		end()
	}
	return b
}

// newPubSub answers a PubSub without channels (and without a connection yet).
func (e *Engine) newPubSub(ctx context.Context) *goredis.PubSub {
	if e.sharded {
		return e.client.SSubscribe(ctx)
	}
	return e.client.Subscribe(ctx)
}

// stop ends b's receive loop and waits for it; ps is b's connection, read under
// Engine.busMu once b has no channels left (the loop no longer replaces it then).
func (b *busConn) stop(ps *goredis.PubSub) {
	b.cancel()
	// Closing the connection ends a read in progress; go-redis answers every later call on
	// the PubSub with an error.
	_ = ps.Close()
	<-b.done
}

// stopBus stops the receive loops and the fanout and waits for them. Subscribe fails with
// errClosed afterwards.
func (e *Engine) stopBus() {
	e.busMu.Lock()
	e.closed = true
	buses := e.buses
	e.buses = nil
	fan := e.fan
	for _, b := range buses {
		b.cancel()
		_ = b.ps.Close()
	}
	e.busMu.Unlock()
	// Loops stopped by an unsubscribe just before are waited for too.
	e.busWG.Wait()
	if fan != nil {
		fan.Close()
	}
}

// resubscribe replaces b's connection with a new one subscribed to b's channels, after a
// Redis Cluster ended the sharded subscriptions on the old one (a slot moved, a master
// was demoted). e.busMu must not be held.
func (e *Engine) resubscribe(b *busConn) {
	e.busMu.Lock()
	defer e.busMu.Unlock()
	if b.ctx.Err() != nil || len(b.refs) == 0 {
		return
	}
	channels := make([]string, 0, len(b.refs))
	for topic := range b.refs {
		channels = append(channels, e.channel(topic))
	}
	old := b.ps
	b.ps = e.newPubSub(b.ctx)
	// A failed write leaves the channels with go-redis, which subscribes on reconnecting.
	ctx, cancel := context.WithTimeout(b.ctx, busUnsubWait)
	_ = e.subscribeChannels(ctx, b.ps, channels...)
	cancel()
	_ = old.Close()
}

// wanted answers whether the engine still has subscribers of channel on b.
func (e *Engine) wanted(b *busConn, channel string) bool {
	topic, ok := strings.CutPrefix(channel, e.channelPrefix(b.bucket))
	if !ok {
		return false
	}
	e.busMu.Lock()
	defer e.busMu.Unlock()
	return b.refs[topic] > 0
}

// receive reads b's connection until stopBus or its bucket's last unsubscribe: messages
// go to the fanout, PONGs to the Subscribe waiting for them.
func (e *Engine) receive(b *busConn) {
	prefix := e.channelPrefix(b.bucket)
	var pingSent time.Time // when a health ping went unanswered so far; zero when none
	failures := 0
	for b.ctx.Err() == nil {
		ps := e.pubsub(b)
		var msg any
		var err error
		if pingSent.IsZero() {
			// A read timeout here is only quiet, not a broken connection.
			msg, err = ps.ReceiveTimeout(b.ctx, busQuiet)
		} else {
			// A health ping is out. A deadline from the context, not a timeout argument,
			// makes go-redis count a timeout as a broken connection and drop it.
			ctx, cancel := context.WithDeadline(b.ctx, pingSent.Add(busPongWait))
			msg, err = ps.ReceiveTimeout(ctx, 0)
			cancel()
		}
		if b.ctx.Err() != nil {
			return
		}
		if err != nil {
			var ne net.Error
			if pingSent.IsZero() && errors.As(err, &ne) && ne.Timeout() {
				ctx, cancel := context.WithTimeout(b.ctx, busPongWait)
				if ps.Ping(ctx) == nil {
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
			if e.cluster {
				// A dead or demoted master: the next connection must go to the new one.
				e.reloadSlots(b.ctx)
			}
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
			var reply goredis.Error
			if e.sharded && errors.As(err, &reply) {
				// An error reply (MOVED to another node): the subscriptions on this
				// connection are not made, and go-redis keeps the connection.
				e.resubscribe(b)
			}
			continue
		}
		failures = 0
		pingSent = time.Time{} // anything received proves the connection alive
		switch m := msg.(type) {
		case *goredis.Message:
			if topic, ok := strings.CutPrefix(m.Channel, prefix); ok {
				e.fan.Deliver(topic, []byte(m.Payload))
			}
		case *goredis.Pong:
			e.waitMu.Lock()
			w := e.waiters[m.Payload]
			delete(e.waiters, m.Payload)
			e.waitMu.Unlock()
			if w != nil {
				w.wake()
			}
		case *goredis.Subscription:
			if e.sharded && m.Kind == "sunsubscribe" && e.wanted(b, m.Channel) {
				// Redis ended a subscription we still want: the slot moved away.
				e.reloadSlots(b.ctx)
				e.resubscribe(b)
			}
		}
	}
}

// BusDropped answers how many bus messages were dropped because this node's subscribers
// fell behind (the fan-out's queue was full).
func (e *Engine) BusDropped() uint64 {
	e.busMu.Lock()
	defer e.busMu.Unlock()
	if e.fan == nil {
		return 0
	}
	return e.fan.Dropped()
}
