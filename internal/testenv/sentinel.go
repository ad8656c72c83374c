package testenv

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// SentinelGroup is a Redis Sentinel group a test owns: a master, a replica and three
// sentinels (quorum 2) on loopback ports, all stopped when the test ends. Unlike the
// group of deploy/testenv.sh (SentinelURL), a test may kill its servers.
type SentinelGroup struct {
	// URL is the group in the form KEYWARD_REDIS_URL takes (master name kwtest).
	URL string
	// DownAfter is how long the sentinels wait before they call a silent master down.
	DownAfter time.Duration

	t         testing.TB
	sentinels []string // host:port
	mu        sync.Mutex
	servers   map[string]*exec.Cmd // host:port of a Redis server → its process
	lastCmd   *exec.Cmd            // the process start started last
}

// StartSentinelGroup starts a group whose sentinels call the master down after
// downAfter. It needs redis-server (KEYWARD_TEST_REDIS_SERVER, or on the PATH): without it
// the test is skipped, or failed under `make test`.
func StartSentinelGroup(t testing.TB, downAfter time.Duration) *SentinelGroup {
	t.Helper()
	bin := redisServerBin(t)
	g := &SentinelGroup{t: t, DownAfter: downAfter, servers: map[string]*exec.Cmd{}}
	dir := t.TempDir()
	// No diskless-sync delay: the replica is in sync at once, not 5 s after it attached.
	master := g.start(bin, dir, "master", "--save", "", "--appendonly", "no", "--repl-diskless-sync-delay", "0")
	g.servers[master] = g.lastCmd
	_, mport, _ := net.SplitHostPort(master)
	replica := g.start(bin, dir, "replica", "--save", "", "--appendonly", "no", "--replicaof", "127.0.0.1", mport)
	g.servers[replica] = g.lastCmd
	deadline := time.Now().Add(30 * time.Second)
	for !strings.Contains(strings.Join(command(replica, "INFO", "replication"), ""), "master_link_status:up") {
		if time.Now().After(deadline) {
			t.Fatal("the replica did not sync with the master within 30 s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	for i := 1; i <= 3; i++ {
		conf := filepath.Join(dir, fmt.Sprintf("sentinel%d.conf", i))
		text := fmt.Sprintf("sentinel monitor kwtest 127.0.0.1 %s 2\nsentinel down-after-milliseconds kwtest %d\nsentinel failover-timeout kwtest 5000\n",
			mport, downAfter.Milliseconds())
		if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		g.sentinels = append(g.sentinels, g.start(bin, dir, fmt.Sprintf("sentinel%d", i), conf, "--sentinel"))
	}
	// Ready once every sentinel knows the replica and the two other sentinels.
	for _, s := range g.sentinels {
		deadline := time.Now().Add(30 * time.Second)
		for {
			info := strings.Join(command(s, "SENTINEL", "MASTER", "kwtest"), " ")
			if strings.Contains(info, "num-slaves 1 ") && strings.Contains(info, "num-other-sentinels 2 ") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("sentinel %s did not see the whole group within 30 s: %s", s, info)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	g.URL = fmt.Sprintf("redis://%s/0?master_name=kwtest&addr=%s&addr=%s", g.sentinels[0], g.sentinels[1], g.sentinels[2])
	return g
}

// Master answers the master's host:port as the first sentinel that answers sees it.
func (g *SentinelGroup) Master() string {
	for _, s := range g.sentinels {
		if r := command(s, "SENTINEL", "GET-MASTER-ADDR-BY-NAME", "kwtest"); len(r) == 2 {
			return net.JoinHostPort(r[0], r[1])
		}
	}
	return ""
}

// KillMaster SIGKILLs the current master and answers its address.
func (g *SentinelGroup) KillMaster() string {
	g.t.Helper()
	addr := g.Master()
	g.mu.Lock()
	cmd := g.servers[addr]
	g.mu.Unlock()
	if cmd == nil {
		g.t.Fatalf("the sentinels name master %q, which is not a server of this group", addr)
	}
	_ = cmd.Process.Kill()
	return addr
}

// start starts redis-server with args on a free loopback port, retrying another port when
// the first is taken in between, and answers its host:port once it answers PING.
func (g *SentinelGroup) start(bin, dir, name string, args ...string) string {
	g.t.Helper()
	addr, cmd := startRedisServer(g.t, bin, dir, name, nil, args...)
	g.lastCmd = cmd
	return addr
}

// redisServerBin answers the redis-server to start: KEYWARD_TEST_REDIS_SERVER, or the one
// on the PATH; without one the test is skipped, or failed under `make test`.
func redisServerBin(t testing.TB) string {
	t.Helper()
	bin := os.Getenv("KEYWARD_TEST_REDIS_SERVER")
	if bin == "" {
		var err error
		if bin, err = exec.LookPath("redis-server"); err != nil {
			if os.Getenv(EnvRequireServers) == "1" {
				t.Fatalf("redis-server not found: %v", err)
			}
			t.Skipf("redis-server not found: %v", err)
		}
	}
	return bin
}

// freeLoopbackPort answers a port nothing listens on right now.
func freeLoopbackPort(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// startRedisServer starts redis-server with args (and the extra ones portArgs answers for
// its port, if any) on a free loopback port, retrying another port when the first is taken
// in between, and answers its host:port once it answers PING, and its process, killed when
// the test ends.
func startRedisServer(t testing.TB, bin, dir, name string, portArgs func() []string, args ...string) (string, *exec.Cmd) {
	t.Helper()
	for attempt := 0; attempt < 10; attempt++ {
		port := freeLoopbackPort(t)
		work := filepath.Join(dir, name)
		if err := os.MkdirAll(work, 0o700); err != nil {
			t.Fatal(err)
		}
		all := append([]string{}, args...)
		if portArgs != nil {
			all = append(all, portArgs()...)
		}
		cmd := exec.Command(bin, append(all, "--bind", "127.0.0.1", "--port", port, "--dir", work,
			"--loglevel", "warning", "--daemonize", "no")...)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		DiesWithTest(cmd)
		if err := cmd.Start(); err != nil {
			t.Fatalf("start %s: %v", name, err)
		}
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-done
		})
		addr := "127.0.0.1:" + port
		deadline := time.Now().Add(15 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-done:
				deadline = time.Time{} // exited: the port was taken; try another
				continue
			default:
			}
			if r := command(addr, "PING"); len(r) == 1 && r[0] == "PONG" {
				return addr, cmd
			}
			time.Sleep(20 * time.Millisecond)
		}
		select {
		case <-done:
			continue
		default:
			t.Fatalf("%s on %s did not answer PING within 15 s:\n%s", name, addr, out.String())
		}
	}
	t.Fatalf("could not start %s", name)
	return "", nil
}

// command sends one command and answers the reply's strings (an array's items), or
// nothing when the server cannot be reached or answers an error.
func command(addr string, args ...string) []string {
	c := goredis.NewClient(&goredis.Options{Addr: addr, Protocol: 2, DialTimeout: time.Second,
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, MaxRetries: -1, PoolSize: 1,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	cmdArgs := make([]any, len(args))
	for i, a := range args {
		cmdArgs[i] = a
	}
	res, err := c.Do(ctx, cmdArgs...).Result()
	if err != nil {
		return nil
	}
	if items, ok := res.([]any); ok {
		out := make([]string, len(items))
		for i, v := range items {
			out[i] = fmt.Sprint(v)
		}
		return out
	}
	return []string{fmt.Sprint(res)}
}
