package clustertest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/cluster"
)

// Bus deliveries are asynchronous: a test waits up to busDeadline for what must arrive, and
// watches for busQuiet for what must not (a wrong delivery would come in well under it).
const (
	busDeadline = 30 * time.Second
	busQuiet    = 300 * time.Millisecond
)

// recorder is a subscriber callback that keeps what it is given.
type recorder struct {
	mu     sync.Mutex
	got    [][]byte
	signal chan struct{} // capacity 1: something arrived
}

func newRecorder() *recorder { return &recorder{signal: make(chan struct{}, 1)} }

func (r *recorder) fn(p []byte) {
	r.mu.Lock()
	r.got = append(r.got, p)
	r.mu.Unlock()
	select {
	case r.signal <- struct{}{}:
	default:
	}
}

func (r *recorder) messages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]string, len(r.got))
	for i, p := range r.got {
		out[i] = string(p)
	}
	return out
}

// waitN waits until at least n messages arrived and answers all of them.
func (r *recorder) waitN(t *testing.T, n int) []string {
	t.Helper()
	deadline := time.NewTimer(busDeadline)
	defer deadline.Stop()
	for {
		if got := r.messages(); len(got) >= n {
			return got
		}
		select {
		case <-r.signal:
		case <-deadline.C:
			got := r.messages()
			t.Fatalf("after %v: %d messages arrived, want %d: %s", busDeadline, len(got), n, show(got))
		}
	}
}

// quiet waits busQuiet and answers what arrived.
func (r *recorder) quiet() []string {
	time.Sleep(busQuiet)
	return r.messages()
}

func show(msgs []string) string {
	if len(msgs) > 10 {
		return fmt.Sprintf("%q ... (%d)", msgs[:10], len(msgs))
	}
	return fmt.Sprintf("%q", msgs)
}

func subscribe(t *testing.T, e cluster.Engine, topic string, fn func([]byte)) func() {
	t.Helper()
	unsub, err := e.Subscribe(ctxT(t), topic, fn)
	if err != nil {
		t.Fatalf("Subscribe(%q): %v", topic, err)
	}
	if unsub == nil {
		t.Fatalf("Subscribe(%q) returned a nil unsubscribe", topic)
	}
	t.Cleanup(unsub)
	return unsub
}

func publish(t *testing.T, e cluster.Engine, topic string, payload []byte) {
	t.Helper()
	if err := e.Publish(ctxT(t), topic, payload); err != nil {
		t.Fatalf("Publish(%q): %v", topic, err)
	}
}

// testBusDeliver: a message published right after Subscribe returns reaches the subscriber
// on this node, byte for byte, once.
func testBusDeliver(t *testing.T, e cluster.Engine) {
	big := bytes.Repeat([]byte("0123456789abcdef"), 4<<10)
	payloads := [][]byte{[]byte("app-1"), {}, []byte("ключ\x00\xff{}*\n"), big}
	r := newRecorder()
	subscribe(t, e, "apps", r.fn)
	for _, p := range payloads {
		publish(t, e, "apps", p)
	}
	got := r.waitN(t, len(payloads))
	for i, p := range payloads {
		if got[i] != string(p) {
			t.Errorf("message %d = %q (len %d), want %q (len %d)", i, trunc([]byte(got[i])), len(got[i]), trunc(p), len(p))
		}
	}
	if got := r.quiet(); len(got) != len(payloads) {
		t.Fatalf("%d messages arrived, want %d (each once)", len(got), len(payloads))
	}
	// Subscribing and publishing at once, on fresh topics.
	for i := range 20 {
		r := newRecorder()
		topic := "fresh:" + strconv.Itoa(i)
		subscribe(t, e, topic, r.fn)
		publish(t, e, topic, []byte(topic))
		if got := r.waitN(t, 1); got[0] != topic {
			t.Fatalf("got %q, want %q", got[0], topic)
		}
	}
}

// testBusSeveralSubscribers: every subscriber of the topic gets the message, subscribers of
// other topics do not.
func testBusSeveralSubscribers(t *testing.T, e cluster.Engine) {
	subs := []*recorder{newRecorder(), newRecorder(), newRecorder()}
	for _, r := range subs {
		subscribe(t, e, "t", r.fn)
	}
	others := map[string]*recorder{}
	for _, topic := range []string{"t:", "T", "tt", "other"} {
		others[topic] = newRecorder()
		subscribe(t, e, topic, others[topic].fn)
	}
	publish(t, e, "t", []byte("m1"))
	publish(t, e, "t", []byte("m2"))
	for i, r := range subs {
		if got := r.waitN(t, 2); got[0] != "m1" || got[1] != "m2" {
			t.Fatalf("subscriber %d got %q, want [m1 m2]", i, got)
		}
	}
	for i, r := range subs {
		if got := r.quiet(); len(got) != 2 {
			t.Errorf("subscriber %d got %q, want each message once", i, got)
		}
	}
	for topic, r := range others {
		if got := r.messages(); len(got) != 0 {
			t.Errorf("subscriber of %q got %q, published only to t", topic, got)
		}
	}
}

// testBusOrder: two concurrent publishers; the subscriber gets each one's messages in the
// order it published them.
func testBusOrder(t *testing.T, e cluster.Engine) {
	runBusOrder(t, e, e, e)
}

// runBusOrder publishes 100 messages from each of two goroutines, on a and b, to a
// subscriber on s.
func runBusOrder(t *testing.T, a, b, s cluster.Engine) {
	const n = 100
	r := newRecorder()
	subscribe(t, s, "order", r.fn)
	var wg sync.WaitGroup
	for name, e := range map[string]cluster.Engine{"a": a, "b": b} {
		wg.Go(func() {
			for i := range n {
				if err := e.Publish(ctxT(t), "order", fmt.Appendf(nil, "%s:%d", name, i)); err != nil {
					t.Errorf("Publish: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	got := r.waitN(t, 2*n)
	next := map[string]int{"a": 0, "b": 0}
	for _, m := range got {
		name, num, _ := strings.Cut(m, ":")
		i, err := strconv.Atoi(num)
		if err != nil || i != next[name] {
			t.Fatalf("got %q after %s:%d; messages of one publisher out of order: %s", m, name, next[name]-1, show(got))
		}
		next[name]++
	}
	if got := r.quiet(); len(got) != 2*n {
		t.Fatalf("%d messages arrived, want %d", len(got), 2*n)
	}
}

// testBusUnsubscribe: unsubscribing stops delivery to that subscriber only, may be called
// again, and works from inside the callback; a topic can be subscribed again afterwards.
func testBusUnsubscribe(t *testing.T, e cluster.Engine) {
	gone, stays := newRecorder(), newRecorder()
	unsub := subscribe(t, e, "t", gone.fn)
	subscribe(t, e, "t", stays.fn)
	unsub()
	unsub() // a second call does nothing
	publish(t, e, "t", []byte("m1"))
	stays.waitN(t, 1)
	if got := gone.quiet(); len(got) != 0 {
		t.Fatalf("unsubscribed callback got %q", got)
	}

	// Every subscriber of a topic leaves, then one comes back.
	solo := newRecorder()
	unsubSolo := subscribe(t, e, "solo", solo.fn)
	publish(t, e, "solo", []byte("before"))
	solo.waitN(t, 1)
	unsubSolo()
	publish(t, e, "solo", []byte("between"))
	again := newRecorder()
	subscribe(t, e, "solo", again.fn)
	publish(t, e, "solo", []byte("after"))
	again.waitN(t, 1)
	if got := again.quiet(); len(got) != 1 || got[0] != "after" {
		t.Fatalf("resubscribed callback got %q, want [after]: only messages published once subscribed", got)
	}
	if got := solo.quiet(); len(got) != 1 {
		t.Fatalf("unsubscribed callback got %q, want only [before]", got)
	}

	// From inside the callback: the first message ends the subscription.
	var (
		mu    sync.Mutex
		calls int
		self  func()
		ready = make(chan struct{})
	)
	self = subscribe(t, e, "self", func([]byte) {
		<-ready
		mu.Lock()
		calls++
		mu.Unlock()
		self()
	})
	close(ready)
	publish(t, e, "self", []byte("1"))
	publish(t, e, "self", []byte("2"))
	publish(t, e, "self", []byte("3"))
	stays2 := newRecorder()
	subscribe(t, e, "self", stays2.fn)
	publish(t, e, "self", []byte("4"))
	stays2.waitN(t, 1)
	time.Sleep(busQuiet)
	mu.Lock()
	defer mu.Unlock()
	if calls != 1 {
		t.Fatalf("callback that unsubscribed itself on its first call was called %d times", calls)
	}
}

// testBusPublishDoesNotWait: callbacks run on the engine's goroutine, so a slow subscriber
// does not hold up Publish.
func testBusPublishDoesNotWait(t *testing.T, e cluster.Engine) {
	release := make(chan struct{})
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()
	r := newRecorder()
	subscribe(t, e, "slow", func(p []byte) {
		<-release
		r.fn(p)
	})
	for i := range 3 {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := e.Publish(ctx, "slow", []byte(strconv.Itoa(i)))
		cancel()
		if err != nil {
			t.Fatalf("Publish %d while the subscriber is blocked: %v", i, err)
		}
	}
	close(release)
	released = true
	if got := r.waitN(t, 3); got[0] != "0" || got[1] != "1" || got[2] != "2" {
		t.Fatalf("got %q, want [0 1 2]", got)
	}
}

// testBusClose: Close ends delivery: once it returns no callback is started, and the bus
// answers ErrUnavailable.
func testBusClose(t *testing.T, e cluster.Engine) {
	var (
		mu    sync.Mutex
		calls int
	)
	first := make(chan struct{}, 1)
	unsub := subscribe(t, e, "t", func([]byte) {
		mu.Lock()
		calls++
		mu.Unlock()
		select {
		case first <- struct{}{}:
		default:
		}
		time.Sleep(time.Millisecond) // keep some messages queued when Close comes
	})
	publish(t, e, "t", []byte("first"))
	select {
	case <-first:
	case <-time.After(busDeadline):
		t.Fatal("first message not delivered")
	}
	for i := range 50 {
		publish(t, e, "t", []byte(strconv.Itoa(i)))
	}
	if err := e.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	mu.Lock()
	atClose := calls
	mu.Unlock()
	time.Sleep(busQuiet)
	mu.Lock()
	after := calls
	mu.Unlock()
	if after != atClose {
		t.Fatalf("%d callbacks ran after Close returned", after-atClose)
	}
	unsub() // after Close: does nothing, does not hang
	ctx := ctxT(t)
	if err := e.Publish(ctx, "t", []byte("late")); !errors.Is(err, cluster.ErrUnavailable) {
		t.Errorf("Publish after Close = %v, want ErrUnavailable", err)
	}
	if _, err := e.Subscribe(ctx, "t", func([]byte) {}); !errors.Is(err, cluster.ErrUnavailable) {
		t.Errorf("Subscribe after Close = %v, want ErrUnavailable", err)
	}
}
