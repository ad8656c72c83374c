package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/testenv"
)

// redisFrozenBound is the README's "about a second" for an answer that needs a frozen Redis,
// with a tenth for a loaded test machine; answers took 1.2-1.3 s here (2.0-3.7 s in the
// field) before every command was bounded as a whole.
const redisFrozenBound = 1100 * time.Millisecond

// TestRedisFrozenAnswersWithinASecond freezes (SIGSTOP) the Redis of a cluster node while
// 24 signed-in clients heartbeat at once, with the readiness probe and an owner login
// alongside: every answer is a prompt 503 (a 503 readiness), none waits behind Redis. The
// times are logged (-v) for the report.
func TestRedisFrozenAnswersWithinASecond(t *testing.T) {
	redisAddr, redis := startRedisServer(t)
	env := []string{"KEYWARD_DATA_DIR=" + t.TempDir(), "KEYWARD_MONGO_URI=" + testenv.MongoURI(t),
		"KEYWARD_MONGO_DATABASE=" + testenv.UniqueName("kwtest_"), "KEYWARD_REDIS_URL=redis://" + redisAddr + "/0",
		"KEYWARD_JWT_SECRET=" + strings.Repeat("r", 40), "KEYWARD_SECRETS_KEY=" + strings.Repeat("k", 40),
		"KEYWARD_TRUSTED_PROXIES=127.0.0.1/32"}
	n := startNode(t, env)
	for _, args := range [][]string{
		{"admin", "create", "--username", "owner", "--email", "owner@example.com", "--password", "Owner-Pass-12"},
		{"admin", "set", "--username", "owner", "--plan", "business"},
	} {
		cmd := exec.Command(binary, args...)
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	owner := call(t, "POST", n.url+"/api/auth/login", "", map[string]string{"username": "owner", "password": "Owner-Pass-12"}).data(200)["token"].(string)
	app := call(t, "POST", n.url+"/api/apps", owner, map[string]string{"name": "Frozen"}).data(201)
	appID, secret := app["id"].(string), app["secret"].(string)
	const clients = 24
	sessions := make([]string, clients)
	for i := range sessions {
		name := fmt.Sprintf("user%d", i)
		call(t, "POST", n.url+"/api/apps/"+appID+"/users", owner, map[string]string{"username": name, "password": "User-Pass-12"}).data(201)
		s, err := sdkLogin(n.url, secret, fmt.Sprintf("192.0.2.%d", i+1), name, "User-Pass-12")
		if err != nil {
			t.Fatal(err)
		}
		sessions[i] = s
	}

	heartbeat := func(session string) int {
		status, out, err := sdkPost(n.url, "nonce", "127.0.0.1", "", map[string]string{"sessionToken": session})
		if err != nil {
			t.Error(err)
			return 0
		}
		if status != 200 {
			return status
		}
		nonce := out["data"].(map[string]any)["nonce"].(string)
		raw, _ := json.Marshal(map[string]string{"sessionToken": session})
		req, _ := http.NewRequest("POST", n.url+"/api/client/heartbeat", bytes.NewReader(raw))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Nonce", nonce)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	readyz := func() int {
		resp, err := http.Get(n.url + "/readyz")
		if err != nil {
			t.Error(err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	ownerLogin := func() int {
		raw, _ := json.Marshal(map[string]string{"username": "owner", "password": "Owner-Pass-12"})
		resp, err := http.Post(n.url+"/api/auth/login", "application/json", bytes.NewReader(raw))
		if err != nil {
			t.Error(err)
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for i, s := range sessions {
		if st := heartbeat(s); st != 200 {
			t.Fatalf("heartbeat %d before the freeze: %d", i, st)
		}
	}

	freeze(t, redis)
	defer func() { _ = redis.Process.Signal(syscall.SIGCONT) }()
	type answer struct {
		what   string
		status int
		took   time.Duration
	}
	var mu sync.Mutex
	var answers []answer
	var wg sync.WaitGroup
	run := func(what string, fn func() int) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			start := time.Now()
			st := fn()
			mu.Lock()
			answers = append(answers, answer{what, st, time.Since(start)})
			mu.Unlock()
		}()
	}
	for round := range 2 {
		for i, s := range sessions {
			run(fmt.Sprintf("round %d heartbeat %d", round+1, i), func() int { return heartbeat(s) })
		}
		run(fmt.Sprintf("round %d readyz", round+1), readyz)
		run(fmt.Sprintf("round %d owner login", round+1), ownerLogin)
		wg.Wait()
	}
	slices.SortFunc(answers, func(a, b answer) int { return int(a.took - b.took) })
	var took []string
	for _, a := range answers {
		took = append(took, a.what+"="+a.took.Round(time.Millisecond).String())
		if a.status != 503 {
			t.Errorf("%s with Redis frozen: %d, want 503", a.what, a.status)
		}
		if a.took > redisFrozenBound {
			t.Errorf("%s with Redis frozen took %v", a.what, a.took.Round(time.Millisecond))
		}
	}
	t.Logf("%d answers with Redis frozen, fastest to slowest: %s", len(answers), strings.Join(took, " "))
}
