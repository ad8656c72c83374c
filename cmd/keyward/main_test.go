package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/testenv"
)

var binary string

// TestMain builds the real binary once; the tests below run it as separate processes.
func TestMain(m *testing.M) { testenv.RunWithKeyward(m, func(b string) { binary = b }) }

func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// node is a keyward serve process.
type node struct {
	cmd    *exec.Cmd
	url    string
	stderr *testenv.LogBuffer
	done   chan error
}

func startNode(t *testing.T, env []string) *node {
	t.Helper()
	addr := freeAddr(t)
	cmd := exec.Command(binary, "serve")
	testenv.DiesWithTest(cmd)
	// Cheap password hashes unless the test asks for others (env comes last: it wins).
	cmd.Env = append(append(os.Environ(), "KEYWARD_ARGON2_MEMORY_KIB=1024", "KEYWARD_ARGON2_ITERATIONS=1"), append(env, "KEYWARD_ADDR="+addr)...)
	n := &node{cmd: cmd, url: "http://" + addr, stderr: &testenv.LogBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = n.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { n.done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-n.done
	})
	deadline := time.Now().Add(30 * time.Second)
	for {
		if resp, err := http.Get(n.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return n
			}
		}
		select {
		case err := <-n.done:
			n.done <- err
			t.Fatalf("node exited: %v\n%s", err, n.stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("node not ready:\n%s", n.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (n *node) stop(t *testing.T) {
	t.Helper()
	if err := n.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-n.done:
		n.done <- err
		if err != nil {
			t.Fatalf("exit after SIGTERM: %v\n%s", err, n.stderr)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("no exit after SIGTERM:\n%s", n.stderr)
	}
}

func post(t *testing.T, url string, body any) (int, map[string]any) {
	t.Helper()
	raw, _ := json.Marshal(body)
	resp, err := http.Post(url, "application/json", bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	b, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatalf("not JSON: %q", b)
	}
	return resp.StatusCode, out
}

func TestServeRunsTheEmbeddedDefaultAndStopsOnSIGTERM(t *testing.T) {
	dir := t.TempDir()
	n := startNode(t, []string{"KEYWARD_DATA_DIR=" + dir})
	if !strings.Contains(n.stderr.String(), "cluster=memory") || !strings.Contains(n.stderr.String(), "storage=sqlite:") {
		t.Fatalf("start-up line:\n%s", n.stderr)
	}
	// An account made by the admin command while the server runs on the same database
	// can sign in through the server at once.
	out, err := exec.Command(binary, "admin", "create", "--username", "root", "--email", "root@example.com",
		"--password", "Admin-Pass-1", "--role", "admin", "--data-dir", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("admin create: %v\n%s", err, out)
	}
	status, body := post(t, n.url+"/api/auth/login", map[string]string{"username": "root", "password": "Admin-Pass-1"})
	if status != 200 || body["success"] != true {
		t.Fatalf("login: %d %v", status, body)
	}
	out, err = exec.Command(binary, "admin", "set", "--username", "root", "--plan", "business", "--data-dir", dir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "plan business") {
		t.Fatalf("admin set: %v\n%s", err, out)
	}
	out, err = exec.Command(binary, "admin", "set", "--username", "nobody", "--plan", "pro", "--data-dir", dir).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "nobody") {
		t.Fatalf("admin set of an unknown account: %v\n%s", err, out)
	}
	n.stop(t)
	if !strings.Contains(n.stderr.String(), "shutting down") || !strings.Contains(n.stderr.String(), "stopped") {
		t.Fatalf("no graceful shutdown in log:\n%s", n.stderr)
	}
}

func TestServeHelpAndBadConfiguration(t *testing.T) {
	out, err := exec.Command(binary, "serve", "--help").CombinedOutput()
	if err != nil || !strings.Contains(string(out), "KEYWARD_MONGO_URI") || !strings.Contains(string(out), "KEYWARD_SMTP_HOST") {
		t.Fatalf("help: %v\n%s", err, out)
	}
	cmd := exec.Command(binary, "serve")
	testenv.DiesWithTest(cmd)
	cmd.Env = append(os.Environ(), "KEYWARD_LOG_LEVEL=shouting", "KEYWARD_DATA_DIR="+t.TempDir())
	out, err = cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(out), "log-level") {
		t.Fatalf("bad config: %v\n%s", err, out)
	}
}

// TestClusterNodeSurvivesARedisOutage kills the Redis server under a cluster-mode node:
// readiness fails and requests needing Redis answer a 503 envelope promptly; once Redis is
// back, the node heals without a restart.
func TestClusterNodeSurvivesARedisOutage(t *testing.T) {
	redisBin := os.Getenv("KEYWARD_TEST_REDIS_SERVER")
	mongo := testenv.MongoURI(t)
	if redisBin == "" {
		if os.Getenv(testenv.EnvRequireServers) == "1" {
			t.Fatal("KEYWARD_TEST_REDIS_SERVER is not set")
		}
		t.Skip("KEYWARD_TEST_REDIS_SERVER is not set: run make test")
	}
	redisAddr := freeAddr(t)
	_, port, _ := net.SplitHostPort(redisAddr)
	startRedis := func() *exec.Cmd {
		cmd := exec.Command(redisBin, "--bind", "127.0.0.1", "--port", port, "--save", "", "--appendonly", "no")
		cmd.Dir = t.TempDir()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(10 * time.Second)
		for {
			if c, err := net.Dial("tcp", redisAddr); err == nil {
				c.Close()
				return cmd
			}
			if time.Now().After(deadline) {
				t.Fatal("redis did not start")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	redis := startRedis()
	t.Cleanup(func() { _ = redis.Process.Kill(); _ = redis.Wait() })
	n := startNode(t, []string{"KEYWARD_DATA_DIR=" + t.TempDir(), "KEYWARD_MONGO_URI=" + mongo,
		"KEYWARD_MONGO_DATABASE=" + testenv.UniqueName("kwtest_"), "KEYWARD_REDIS_URL=redis://" + redisAddr + "/0",
		"KEYWARD_JWT_SECRET=" + strings.Repeat("j", 40), "KEYWARD_SECRETS_KEY=" + strings.Repeat("k", 40)})

	_ = redis.Process.Kill()
	_ = redis.Wait()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", n.url+"/readyz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("readyz hung or failed: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("readyz with Redis down: %d", resp.StatusCode)
	}
	status, body := post(t, n.url+"/api/auth/login", map[string]string{"username": "someone", "password": "Some-Pass-1"})
	if status != http.StatusServiceUnavailable || body["success"] != false || body["error"].(map[string]any)["code"] != "UNAVAILABLE" {
		t.Fatalf("login with Redis down: %d %v", status, body)
	}

	redis = startRedis()
	deadline := time.Now().Add(20 * time.Second)
	for {
		resp, err := http.Get(n.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("node did not heal after Redis came back:\n%s", n.stderr)
		}
		time.Sleep(100 * time.Millisecond)
	}
	status, _ = post(t, n.url+"/api/auth/login", map[string]string{"username": "someone", "password": "Some-Pass-1"})
	if status != http.StatusUnauthorized {
		t.Fatalf("login after heal: %d", status)
	}
	n.stop(t)
}

func get(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestTwoProcessesFormACluster runs two keyward processes on one MongoDB-wire database and
// one Redis: an account made by the admin command signs in on either, a logout on one is
// refused by the other, and the login limit counts across both.
func TestTwoProcessesFormACluster(t *testing.T) {
	env := []string{"KEYWARD_MONGO_URI=" + testenv.MongoURI(t), "KEYWARD_MONGO_DATABASE=" + testenv.UniqueName("kwtest_"),
		"KEYWARD_REDIS_URL=" + testenv.RedisURL(t), "KEYWARD_REDIS_PREFIX=" + testenv.UniqueName("kwtest:") + ":",
		"KEYWARD_JWT_SECRET=" + strings.Repeat("c", 40), "KEYWARD_SECRETS_KEY=" + strings.Repeat("k", 40), "KEYWARD_TRUSTED_PROXIES=127.0.0.1/32"}
	a := startNode(t, append(env, "KEYWARD_DATA_DIR="+t.TempDir()))
	b := startNode(t, append(env, "KEYWARD_DATA_DIR="+t.TempDir()))
	admin := exec.Command(binary, "admin", "create", "--username", "ops", "--email", "ops@example.com", "--password", "Ops-Pass-12")
	admin.Env = append(append(os.Environ(), env...), "KEYWARD_DATA_DIR="+t.TempDir())
	if out, err := admin.CombinedOutput(); err != nil {
		t.Fatalf("admin create: %v\n%s", err, out)
	}
	status, body := post(t, a.url+"/api/auth/login", map[string]string{"username": "ops", "password": "Ops-Pass-12"})
	if status != 200 {
		t.Fatalf("login on a: %d %v", status, body)
	}
	token := body["data"].(map[string]any)["token"].(string)
	if got := get(t, b.url+"/api/auth/me", token); got != 200 {
		t.Fatalf("token from a on b: %d", got)
	}
	req, _ := http.NewRequest("POST", b.url+"/api/auth/logout", nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("logout on b: %v %v", err, resp)
	}
	resp.Body.Close()
	if got := get(t, a.url+"/api/auth/me", token); got != 401 {
		t.Fatalf("token logged out on b still works on a: %d", got)
	}
	for i := 0; i < 5; i++ {
		post(t, []*node{a, b}[i%2].url+"/api/auth/login", map[string]string{"username": "ops", "password": "Wrong-Pass-1"})
	}
	status, _ = post(t, b.url+"/api/auth/login", map[string]string{"username": "ops", "password": "Ops-Pass-12"})
	if status != http.StatusTooManyRequests {
		t.Fatalf("6th login across two nodes: %d", status)
	}
	a.stop(t)
	b.stop(t)
}
