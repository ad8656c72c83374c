package redis_test

import (
	"bytes"
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/keyward/keyward/cluster"
	"github.com/keyward/keyward/cluster/clustertest"
	kwredis "github.com/keyward/keyward/cluster/redis"
	"github.com/keyward/keyward/internal/testenv"
)

func newEngine(t testing.TB, url string) *kwredis.Engine {
	t.Helper()
	return newEngineWithPrefix(t, url, testenv.UniqueName("kwtest:")+":")
}

func newEngineWithPrefix(t testing.TB, url, prefix string) *kwredis.Engine {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// The conformance suite checks what the engine answers, not how fast: a command bound
	// of 400 ms (the default, held by the outage tests in cmd/keyward) fails a busy test
	// machine's first command on a Redis Cluster, which loads the slot map and dials.
	e, err := kwredis.New(ctx, kwredis.Config{URL: url, Prefix: prefix, CommandTimeout: conformanceCommandTimeout})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

// conformanceCommandTimeout bounds each command of the engines the conformance suite makes.
const conformanceCommandTimeout = 3 * time.Second

func TestConformance(t *testing.T) {
	url := testenv.RedisURL(t)
	clustertest.Run(t, func(t *testing.T) cluster.Engine { return newEngine(t, url) })
}

// TestConformanceShared runs the two-node subtests on two engines with one prefix: two
// nodes of one cluster.
func TestConformanceShared(t *testing.T) {
	url := testenv.RedisURL(t)
	runShared(t, url)
}

// runShared runs the two-node subtests of the suite on two engines over url with one
// prefix: two nodes of one cluster.
func runShared(t *testing.T, url string) {
	clustertest.RunShared(t, func(t *testing.T) (cluster.Engine, cluster.Engine) {
		prefix := testenv.UniqueName("kwtest:") + ":"
		return newEngineWithPrefix(t, url, prefix), newEngineWithPrefix(t, url, prefix)
	})
}

func BenchmarkAllow(b *testing.B) {
	clustertest.BenchmarkAllow(b, newEngine(b, testenv.RedisURL(b)))
}

func BenchmarkPresenceAdmit(b *testing.B) {
	clustertest.BenchmarkPresenceAdmit(b, newEngine(b, testenv.RedisURL(b)))
}

// TestPrefixesIsolate: two engines on one Redis with different prefixes share nothing, and
// two with the same prefix share everything (that is how nodes cooperate).
func TestPrefixesIsolate(t *testing.T) {
	url := testenv.RedisURL(t)
	ctx := context.Background()
	prefix := testenv.UniqueName("kwtest:") + ":"
	mk := func(prefix string) *kwredis.Engine {
		e, err := kwredis.New(ctx, kwredis.Config{URL: url, Prefix: prefix})
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		t.Cleanup(func() { _ = e.Close() })
		return e
	}
	node1, node2, other := mk(prefix), mk(prefix), mk(testenv.UniqueName("kwtest:")+":")
	if d, err := node1.Allow(ctx, "k", 1, time.Minute); err != nil || !d.Allowed {
		t.Fatalf("node1 Allow = %+v, %v", d, err)
	}
	if d, err := node2.Allow(ctx, "k", 1, time.Minute); err != nil || d.Allowed {
		t.Fatalf("node2 Allow = %+v, %v; want refused: nodes share the count", d, err)
	}
	if d, err := other.Allow(ctx, "k", 1, time.Minute); err != nil || !d.Allowed {
		t.Fatalf("other-prefix Allow = %+v, %v; want allowed", d, err)
	}
	if err := node1.PutToken(ctx, "n", "v", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := other.TakeToken(ctx, "n"); err != nil || ok {
		t.Fatalf("other-prefix TakeToken = %v, %v; want not ok", ok, err)
	}
	if v, ok, err := node2.TakeToken(ctx, "n"); err != nil || !ok || v != "v" {
		t.Fatalf("node2 TakeToken = %q, %v, %v; want v", v, ok, err)
	}
}

func TestNewRejectsBadURL(t *testing.T) {
	ctx := context.Background()
	for _, url := range []string{"", "http://user:s3cret@localhost:6379", "redis://user:s3cret@[::1", "redis://user:s3cret@localhost:6379/notadb"} {
		_, err := kwredis.New(ctx, kwredis.Config{URL: url})
		if err == nil {
			t.Errorf("New(%q) succeeded", url)
			continue
		}
		if errors.Is(err, cluster.ErrUnavailable) {
			t.Errorf("New(%q) = %v: a bad URL is not unavailability", url, err)
		}
		t.Logf("New(bad URL): %v", err)
		if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("New error leaks the password: %v", err)
		}
	}
}

// TestNewUnreachable: a port nobody listens on fails New with ErrUnavailable. The caller's
// deadline only bounds the test; a refused port fails long before it.
func TestNewUnreachable(t *testing.T) {
	port := freePort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := kwredis.New(ctx, kwredis.Config{URL: "redis://:s3cret@127.0.0.1:" + port + "/0"})
	if !errors.Is(err, cluster.ErrUnavailable) {
		t.Fatalf("New(unreachable) = %v, want ErrUnavailable", err)
	}
	if ctx.Err() != nil {
		t.Fatalf("New(unreachable) needed the caller's deadline: %v", err)
	}
	if strings.Contains(err.Error(), "s3cret") {
		t.Errorf("error leaks the password: %v", err)
	}
	t.Logf("error: %v", err)
}

// TestOutage kills a Redis under a live engine and restarts it: calls during the outage fail
// with ErrUnavailable on their own (not by running into the caller's deadline), and the
// engine heals without being recreated.
func TestOutage(t *testing.T) {
	bin := redisServer(t)
	port := freePort(t)
	url := "redis://127.0.0.1:" + port + "/0"
	srv := startRedis(t, bin, port)
	e := newEngineEventually(t, url)

	ctx := context.Background()
	if d, err := e.Allow(ctx, "k", 5, time.Minute); err != nil || !d.Allowed {
		t.Fatalf("Allow before the outage = %+v, %v", d, err)
	}
	got := make(chan []byte, 100)
	if _, err := e.Subscribe(ctx, "t", func(p []byte) { got <- p }); err != nil {
		t.Fatalf("Subscribe before the outage: %v", err)
	}

	srv.kill(t)
	assertAllUnavailable(t, e)

	startRedis(t, bin, port)
	awaitHealed(t, e)
	// The new Redis is empty (no persistence): the key starts over.
	if d, err := e.Allow(ctx, "k", 5, time.Minute); err != nil || !d.Allowed || d.Remaining != 4 {
		t.Fatalf("Allow after healing = %+v, %v; want allowed with Remaining 4", d, err)
	}
	if err := e.PutToken(ctx, "t", "v", time.Minute); err != nil {
		t.Fatalf("PutToken after healing: %v", err)
	}
	if v, ok, err := e.TakeToken(ctx, "t"); err != nil || !ok || v != "v" {
		t.Fatalf("TakeToken after healing = %q, %v, %v", v, ok, err)
	}
	// The subscription made before the outage is renewed on the new server.
	awaitDelivery(t, e, "t", got)
}

// TestFrozen stops (SIGSTOP) a Redis under a live engine: the port still accepts
// connections but nothing answers, the case that hangs clients without read timeouts. Calls
// must fail with ErrUnavailable on their own, and work again after SIGCONT.
func TestFrozen(t *testing.T) {
	bin := redisServer(t)
	port := freePort(t)
	srv := startRedis(t, bin, port)
	e := newEngineEventually(t, "redis://127.0.0.1:"+port+"/0")
	ctx := context.Background()
	// Not a key assertAllUnavailable touches: commands it sent during the freeze may still
	// run when Redis wakes up.
	if err := e.PutToken(ctx, "keep", "v", time.Minute); err != nil {
		t.Fatalf("PutToken before freezing: %v", err)
	}
	got := make(chan []byte, 100)
	if _, err := e.Subscribe(ctx, "keep", func(p []byte) { got <- p }); err != nil {
		t.Fatalf("Subscribe before freezing: %v", err)
	}

	srv.signal(t, syscall.SIGSTOP)
	assertAllUnavailable(t, e)
	srv.signal(t, syscall.SIGCONT)

	awaitHealed(t, e)
	// Same server, data kept: the token put before the freeze is still there.
	if v, ok, err := e.TakeToken(ctx, "keep"); err != nil || !ok || v != "v" {
		t.Fatalf("TakeToken after thawing = %q, %v, %v; want v", v, ok, err)
	}
	// The subscription made before the freeze works again.
	awaitDelivery(t, e, "keep", got)
}

// assertAllUnavailable calls every method once and wants ErrUnavailable from each, reached
// by the engine itself: the caller's generous deadline only bounds the test.
func assertAllUnavailable(t *testing.T, e *kwredis.Engine) {
	t.Helper()
	calls := map[string]func(context.Context) error{
		"Allow": func(ctx context.Context) error { _, err := e.Allow(ctx, "k", 5, time.Minute); return err },
		"PutToken": func(ctx context.Context) error {
			return e.PutToken(ctx, "t", "v", time.Minute)
		},
		"TakeToken": func(ctx context.Context) error { _, _, err := e.TakeToken(ctx, "t"); return err },
		"Ping":      e.Ping,
		"SetValue": func(ctx context.Context) error {
			return e.SetValue(ctx, "v", []byte("v"), time.Minute)
		},
		"GetValue":   func(ctx context.Context) error { _, _, _, err := e.GetValue(ctx, "v"); return err },
		"TouchValue": func(ctx context.Context) error { _, err := e.TouchValue(ctx, "v", time.Minute); return err },
		"DeleteValue": func(ctx context.Context) error {
			_, err := e.DeleteValue(ctx, "v")
			return err
		},
		"AddMember": func(ctx context.Context) error {
			return e.AddMember(ctx, "s", "m", time.Minute, 0)
		},
		"TakeMember":   func(ctx context.Context) error { _, err := e.TakeMember(ctx, "s", "m"); return err },
		"Members":      func(ctx context.Context) error { _, err := e.Members(ctx, "s"); return err },
		"CountMembers": func(ctx context.Context) error { _, err := e.CountMembers(ctx, "s"); return err },
		"Publish":      func(ctx context.Context) error { return e.Publish(ctx, "p", []byte("m")) },
		"Subscribe": func(ctx context.Context) error {
			unsub, err := e.Subscribe(ctx, "during", func([]byte) {})
			if unsub != nil {
				unsub()
			}
			return err
		},
	}
	for _, name := range []string{"Allow", "PutToken", "TakeToken", "Ping",
		"SetValue", "GetValue", "TouchValue", "DeleteValue", "AddMember", "TakeMember", "Members",
		"CountMembers", "Publish", "Subscribe"} {
		// The deadline bounds the test, generously: the engine must fail on its own.
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		err := calls[name](ctx)
		deadlineHit := ctx.Err() != nil
		cancel()
		if !errors.Is(err, cluster.ErrUnavailable) {
			t.Fatalf("%s during the outage = %v, want ErrUnavailable", name, err)
		}
		if deadlineHit {
			t.Fatalf("%s during the outage ran into the caller's deadline: %v", name, err)
		}
		if name == "Allow" || name == "Subscribe" {
			t.Logf("%s: %v", name, err)
		}
	}

}

// awaitHealed polls Ping until the engine reaches Redis again. The pool redials in the
// background about once a second after repeated dial failures.
func awaitHealed(t *testing.T, e *kwredis.Engine) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := e.Ping(context.Background())
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("engine did not heal after Redis came back: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// redisServer finds redis-server, or skips the test (fails it under `make test`).
func redisServer(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv(testenv.EnvRequireServers) == "1" {
			t.Fatalf("redis-server not found: %v", err)
		}
		t.Skipf("redis-server not found, test skipped: %v", err)
	}
	return bin
}

type redisProc struct {
	cmd *exec.Cmd
	out bytes.Buffer // the server's output, logged if the test fails
}

// startRedis starts a throwaway redis-server on 127.0.0.1:port without persistence; it is
// killed when the test ends if the test has not killed it already.
func startRedis(t *testing.T, bin, port string) *redisProc {
	t.Helper()
	cmd := exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "",
		"--appendonly", "no", "--dir", t.TempDir(), "--loglevel", "warning")
	p := &redisProc{cmd: cmd}
	cmd.Stdout, cmd.Stderr = &p.out, &p.out
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() {
		p.kill(t)
		if t.Failed() {
			t.Logf("redis-server on port %s said:\n%s", port, p.out.String())
		}
	})
	// Wait until it accepts connections.
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", "127.0.0.1:"+port, time.Second)
		if err == nil {
			_ = c.Close()
			return p
		}
		if time.Now().After(deadline) {
			t.Fatalf("redis-server on port %s did not start: %v", port, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *redisProc) kill(t *testing.T) {
	t.Helper()
	if p.cmd.ProcessState != nil {
		return // already waited for
	}
	_ = p.cmd.Process.Signal(syscall.SIGCONT) // a frozen process must be able to die
	_ = p.cmd.Process.Kill()
	_ = p.cmd.Wait()
}

func (p *redisProc) signal(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		t.Fatalf("signal redis-server: %v", err)
	}
}

// newEngineEventually retries New for a server that has only just started listening.
func newEngineEventually(t *testing.T, url string) *kwredis.Engine {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		e, err := kwredis.New(context.Background(), kwredis.Config{URL: url})
		if err == nil {
			t.Cleanup(func() { _ = e.Close() })
			return e
		}
		if time.Now().After(deadline) {
			t.Fatalf("New: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// TestConformanceSentinel runs the suite through a Sentinel group's URL (deploy/testenv.sh
// with KEYWARD_TEST_SENTINEL=1, as `make test` runs).
func TestConformanceSentinel(t *testing.T) {
	url := testenv.SentinelURL(t)
	clustertest.Run(t, func(t *testing.T) cluster.Engine { return newEngine(t, url) })
}

func TestConformanceSharedSentinel(t *testing.T) {
	url := testenv.SentinelURL(t)
	runShared(t, url)
}

func TestParseURL(t *testing.T) {
	one, err := kwredis.ParseURL("redis://:pw@10.0.0.1:6380/2")
	if err != nil || one.Server == nil || one.Sentinel != nil || one.Server.Addr != "10.0.0.1:6380" || one.Server.DB != 2 {
		t.Fatalf("single server: %+v, %v", one, err)
	}
	group, err := kwredis.ParseURL("redis://s-user:s-pw@s1:26379/3?master_name=main&addr=s2:26379&addr=s3:26380&password=m-pw")
	if err != nil || group.Sentinel == nil || group.Server != nil {
		t.Fatalf("sentinel group: %+v, %v", group, err)
	}
	fo := group.Sentinel
	if fo.MasterName != "main" || strings.Join(fo.SentinelAddrs, ",") != "s1:26379,s2:26379,s3:26380" || fo.DB != 3 ||
		fo.SentinelUsername != "s-user" || fo.SentinelPassword != "s-pw" || fo.Password != "m-pw" {
		t.Fatalf("sentinel options: %+v", fo)
	}
	if s := group.String(); !strings.Contains(s, "main") || strings.Contains(s, "pw") {
		t.Fatalf("String() = %q", s)
	}
	for _, bad := range []string{
		"redis://s1:26379/0?master_name=main&addr=nohostport&password=s3cret",
		"redis://s1:26379/0?master_name=main&frobnicate=1&password=s3cret",
		"redis://:s3cret@s1:26379/x?master_name=main",
	} {
		_, err := kwredis.ParseURL(bad)
		if err == nil {
			t.Errorf("ParseURL(%q) succeeded", bad)
		} else if strings.Contains(err.Error(), "s3cret") {
			t.Errorf("ParseURL error leaks the password: %v", err)
		}
	}
}

// TestSentinelFailover kills the master of a Sentinel group under a live engine: calls fail
// with ErrUnavailable on their own (never by the caller's deadline) while the sentinels
// promote the replica, then succeed on the new master without recreating the engine; the
// bus subscription made before follows. The outage length is logged (about DownAfter plus
// the promotion), not asserted: the machine is shared.
func TestSentinelFailover(t *testing.T) {
	g := testenv.StartSentinelGroup(t, time.Second)
	e := newEngine(t, g.URL)
	ctx := context.Background()
	if d, err := e.Allow(ctx, "k", 5, time.Minute); err != nil || !d.Allowed {
		t.Fatalf("Allow before the failover = %+v, %v", d, err)
	}
	got := make(chan []byte, 100)
	if _, err := e.Subscribe(ctx, "t", func(p []byte) { got <- p }); err != nil {
		t.Fatalf("Subscribe before the failover: %v", err)
	}

	old := g.KillMaster()
	killed := time.Now()
	var firstFail, lastFail time.Time
	slowest := time.Duration(0)
	for {
		cctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		start := time.Now()
		err := e.PutToken(cctx, "f", "v", time.Minute)
		took := time.Since(start)
		deadlineHit := cctx.Err() != nil
		cancel()
		slowest = max(slowest, took)
		if err == nil {
			if g.Master() != old {
				break
			}
			time.Sleep(20 * time.Millisecond)
			continue // a write that reached the old master before it died
		}
		if !errors.Is(err, cluster.ErrUnavailable) || deadlineHit {
			t.Fatalf("PutToken during the failover = %v (deadline hit: %v), want ErrUnavailable on its own", err, deadlineHit)
		}
		if firstFail.IsZero() {
			firstFail = time.Now()
		}
		lastFail = time.Now()
		if time.Since(killed) > 60*time.Second {
			t.Fatalf("no failover 60 s after the master was killed: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Logf("master %s killed; writes failed for %.2f s (first failure %.2f s after the kill), healed %.2f s after it on %s; slowest call %.2f s",
		old, lastFail.Sub(firstFail).Seconds(), firstFail.Sub(killed).Seconds(), time.Since(killed).Seconds(), g.Master(), slowest.Seconds())
	if v, ok, err := e.TakeToken(ctx, "f"); err != nil || !ok || v != "v" {
		t.Fatalf("TakeToken on the new master = %q, %v, %v", v, ok, err)
	}
	awaitDelivery(t, e, "t", got)
}
