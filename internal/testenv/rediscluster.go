package testenv

import (
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// RedisCluster is a Redis Cluster a test owns: three masters and a replica of each on
// loopback ports, all stopped when the test ends. Unlike the cluster of deploy/testenv.sh
// (RedisClusterURL), a test may kill its servers.
type RedisCluster struct {
	// URL is the cluster in the form KEYWARD_REDIS_URL takes (its three masters as seeds).
	URL string
	// Addrs are the six servers' host:port, masters first.
	Addrs []string

	t       testing.TB
	mu      sync.Mutex
	servers map[string]*exec.Cmd // host:port → its process
}

// StartRedisCluster starts a cluster whose nodes call a silent peer failed after
// nodeTimeout (cluster-node-timeout), so a killed master's replica is promoted soon after.
// It needs redis-server and redis-cli: without them the test is skipped, or failed under
// `make test`.
func StartRedisCluster(t testing.TB, nodeTimeout time.Duration) *RedisCluster {
	t.Helper()
	bin := redisServerBin(t)
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatalf("redis-cli not found (it comes with redis-server): %v", err)
	}
	c := &RedisCluster{t: t, servers: map[string]*exec.Cmd{}}
	dir := t.TempDir()
	var addrs []string
	for i := 1; i <= 6; i++ {
		// The cluster bus needs a port of its own; port+10000, Redis's default, may be
		// beyond 65535 for a port from the ephemeral range.
		busPort := func() []string { return []string{"--cluster-port", freeLoopbackPort(t)} }
		addr, cmd := startRedisServer(t, bin, dir, fmt.Sprintf("node%d", i), busPort,
			"--save", "", "--appendonly", "no", "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
			"--cluster-node-timeout", fmt.Sprint(nodeTimeout.Milliseconds()), "--repl-diskless-sync-delay", "0")
		c.servers[addr] = cmd
		addrs = append(addrs, addr)
	}
	// The first three become masters, the last three their replicas.
	out, err := exec.Command(cli, append(append([]string{"--cluster", "create"}, addrs...),
		"--cluster-replicas", "1", "--cluster-yes")...).CombinedOutput()
	if err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	for _, addr := range addrs {
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(strings.Join(command(addr, "CLUSTER", "INFO"), ""), "cluster_state:ok") {
			if time.Now().After(deadline) {
				t.Fatalf("node %s did not reach cluster_state:ok within 30 s", addr)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	// redis-cli makes the replicas replicate once the masters agree; wait for the sync, so
	// that a test may fail a master over at once.
	for _, addr := range addrs[3:] {
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(strings.Join(command(addr, "INFO", "replication"), ""), "master_link_status:up") {
			if time.Now().After(deadline) {
				t.Fatalf("replica %s did not sync with its master within 30 s", addr)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	c.Addrs = addrs
	c.URL = fmt.Sprintf("redis://%s?addr=%s&addr=%s&cluster=true", addrs[0], addrs[1], addrs[2])
	return c
}

// Kill SIGKILLs the server at addr (host:port, as the cluster names its nodes).
func (c *RedisCluster) Kill(addr string) {
	c.t.Helper()
	c.mu.Lock()
	cmd := c.servers[addr]
	c.mu.Unlock()
	if cmd == nil {
		c.t.Fatalf("%q is not a server of this cluster", addr)
	}
	_ = cmd.Process.Kill()
}

// Ping answers whether a Redis server at addr (host:port) answers PING.
func Ping(addr string) bool {
	r := command(addr, "PING")
	return len(r) == 1 && r[0] == "PONG"
}

// Command sends one command to the server at addr and answers the reply's strings, or
// nothing when the server cannot be reached or answers an error.
func Command(addr string, args ...string) []string { return command(addr, args...) }

// ReplicaOf answers the host:port of a server that replicates master, or "".
func (c *RedisCluster) ReplicaOf(master string) string {
	for _, addr := range c.Addrs {
		// ROLE of a replica: slave, master host, master port, state, offset.
		if r := command(addr, "ROLE"); len(r) >= 3 && r[0] == "slave" && r[1]+":"+r[2] == master {
			return addr
		}
	}
	return ""
}
