package redis_test

import (
	"context"
	"errors"
	"runtime"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/keyward/keyward/cluster"
	kwredis "github.com/keyward/keyward/cluster/redis"
	"github.com/keyward/keyward/internal/testenv"
)

// rawClient is a plain go-redis client on the test Redis, to look at the engine's keys.
func rawClient(t testing.TB, url string) *goredis.Client {
	t.Helper()
	opts, err := goredis.ParseURL(url)
	if err != nil {
		t.Fatal(err)
	}
	c := goredis.NewClient(opts)
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// TestKeyLayout pins what the doc promises about keys: values are strings with their ttl,
// a set is a sorted set that lives as long as its latest member and disappears when empty,
// and topics are channels under the prefix that any Redis client can use.
func TestKeyLayout(t *testing.T) {
	url := testenv.RedisURL(t)
	prefix := testenv.UniqueName("kwtest:") + ":"
	e := newEngineWithPrefix(t, url, prefix)
	raw := rawClient(t, url)
	ctx := context.Background()

	if err := e.SetValue(ctx, "v", []byte("session"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if got, err := raw.Get(ctx, prefix+"val:v").Result(); err != nil || got != "session" {
		t.Fatalf("GET val:v = %q, %v", got, err)
	}
	if pttl, err := raw.PTTL(ctx, prefix+"val:v").Result(); err != nil || pttl <= 50*time.Second || pttl > time.Minute {
		t.Fatalf("PTTL val:v = %v, %v", pttl, err)
	}

	key := prefix + "set:s"
	if err := e.AddMember(ctx, "s", "short", 300*time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	if typ, _ := raw.Type(ctx, key).Result(); typ != "zset" {
		t.Fatalf("TYPE set:s = %q, want zset", typ)
	}
	if pttl, _ := raw.PTTL(ctx, key).Result(); pttl <= 0 || pttl > 300*time.Millisecond {
		t.Fatalf("PTTL of a set whose only member has 300ms = %v", pttl)
	}
	if err := e.AddMember(ctx, "s", "long", time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	if pttl, _ := raw.PTTL(ctx, key).Result(); pttl <= 50*time.Second {
		t.Fatalf("PTTL after adding a 1m member = %v, want about 1m", pttl)
	}
	if ok, err := e.TakeMember(ctx, "s", "long"); err != nil || !ok {
		t.Fatalf("TakeMember = %v, %v", ok, err)
	}
	time.Sleep(300*time.Millisecond + 100*time.Millisecond)
	// The key outlives its last member only until the expiry set with the latest one, but
	// any call drops expired members, and an empty sorted set is no key at all.
	if n, _ := e.CountMembers(ctx, "s"); n != 0 {
		t.Fatalf("CountMembers = %d, want 0", n)
	}
	if n, _ := raw.Exists(ctx, key).Result(); n != 0 {
		t.Fatal("set key still exists with every member gone")
	}
	// Left alone, a set disappears by Redis's own expiry.
	if err := e.AddMember(ctx, "alone", "m", 200*time.Millisecond, 0); err != nil {
		t.Fatal(err)
	}
	time.Sleep(300 * time.Millisecond)
	if n, _ := raw.Exists(ctx, prefix+"set:alone").Result(); n != 0 {
		t.Fatal("abandoned set key outlived its members")
	}

	// The bus is PUBLISH/SUBSCRIBE on <prefix>bus:<topic>, both ways.
	got := make(chan string, 4)
	unsub, err := e.Subscribe(ctx, "t", func(p []byte) { got <- string(p) })
	if err != nil {
		t.Fatal(err)
	}
	defer unsub()
	ps := raw.Subscribe(ctx, prefix+"bus:t")
	defer ps.Close()
	if _, err := ps.Receive(ctx); err != nil { // the subscription's confirmation
		t.Fatal(err)
	}
	if err := raw.Publish(ctx, prefix+"bus:t", "from-raw").Err(); err != nil {
		t.Fatal(err)
	}
	if err := e.Publish(ctx, "t", []byte("from-engine")); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"from-raw", "from-engine"} {
		select {
		case p := <-got:
			if p != want {
				t.Fatalf("engine subscriber got %q, want %q", p, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("engine subscriber did not get %q", want)
		}
	}
	for _, want := range []string{"from-raw", "from-engine"} {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		m, err := ps.ReceiveMessage(ctx)
		cancel()
		if err != nil || m.Payload != want {
			t.Fatalf("raw subscriber got %v, %v; want %q", m, err, want)
		}
	}
}

// TestPrefixesIsolateNewKinds: values, sets and topics of one prefix are invisible to an
// engine with another; channels matter most, as Redis Pub/Sub ignores the database number.
func TestPrefixesIsolateNewKinds(t *testing.T) {
	url := testenv.RedisURL(t)
	ctx := context.Background()
	mine := newEngine(t, url)
	other := newEngine(t, url)
	if err := mine.SetValue(ctx, "k", []byte("v"), time.Minute); err != nil {
		t.Fatal(err)
	}
	if err := mine.AddMember(ctx, "s", "m", time.Minute, 0); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, err := other.GetValue(ctx, "k"); err != nil || ok {
		t.Fatalf("other-prefix GetValue = %v, %v; want absent", ok, err)
	}
	if n, err := other.CountMembers(ctx, "s"); err != nil || n != 0 {
		t.Fatalf("other-prefix CountMembers = %d, %v; want 0", n, err)
	}
	var mu sync.Mutex
	var leaked []string
	unsub, err := other.Subscribe(ctx, "t", func(p []byte) {
		mu.Lock()
		leaked = append(leaked, string(p))
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}
	defer unsub()
	got := make(chan struct{}, 1)
	unsubMine, err := mine.Subscribe(ctx, "t", func([]byte) { got <- struct{}{} })
	if err != nil {
		t.Fatal(err)
	}
	defer unsubMine()
	if err := mine.Publish(ctx, "t", []byte("m")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("own subscriber got nothing")
	}
	time.Sleep(300 * time.Millisecond)
	mu.Lock()
	defer mu.Unlock()
	if len(leaked) != 0 {
		t.Fatalf("other-prefix subscriber got %q", leaked)
	}
}

// TestCloseStopsGoroutines: Close stops the bus's receive loop and fanout and closes the
// subscriber connection, with subscriptions still open.
func TestCloseStopsGoroutines(t *testing.T) {
	url := testenv.RedisURL(t)
	ctx := context.Background()
	before := runtime.NumGoroutine()
	e, err := kwredis.New(ctx, kwredis.Config{URL: url, Prefix: testenv.UniqueName("kwtest:") + ":"})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan struct{}, 10)
	if _, err := e.Subscribe(ctx, "t", func([]byte) { got <- struct{}{} }); err != nil {
		t.Fatal(err)
	}
	if err := e.Publish(ctx, "t", []byte("m")); err != nil {
		t.Fatal(err)
	}
	<-got
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Subscribe(ctx, "t", func([]byte) {}); !errors.Is(err, cluster.ErrUnavailable) {
		t.Fatalf("Subscribe after Close = %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			t.Fatalf("%d goroutines after Close, %d before New:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// awaitDelivery publishes on e until sub receives something: after an outage the subscriber
// connection comes back on its own, and messages published before it did are lost.
func awaitDelivery(t *testing.T, e *kwredis.Engine, topic string, got <-chan []byte) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := e.Publish(ctx, topic, []byte("ping"))
		cancel()
		if err != nil {
			t.Logf("Publish: %v", err)
		}
		select {
		case <-got:
			return
		case <-time.After(200 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("the subscription did not come back after the outage")
		}
	}
}
