package main

import (
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/keyward/keyward/core/integrations"
	"github.com/keyward/keyward/internal/testenv"
)

// webhookReceiver is a local CUSTOM webhook receiver (HTTPS, its certificate in caFile):
// it counts the deliveries of each event id (the payload's id).
type webhookReceiver struct {
	url    string
	caFile string
	mu     sync.Mutex
	ids    map[string]int    // event id → deliveries received
	by     map[string]string // event id → event name
	// seen, when set, gets the time each delivery arrived.
	seen chan time.Time
}

func startReceiver(t testing.TB) *webhookReceiver {
	t.Helper()
	r := &webhookReceiver{ids: map[string]int{}, by: map[string]string{}}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		var body struct {
			ID    string `json:"id"`
			Event string `json:"event"`
		}
		raw, _ := io.ReadAll(req.Body)
		if err := json.Unmarshal(raw, &body); err != nil || body.ID == "" {
			w.WriteHeader(400)
			return
		}
		if h := req.Header.Get("X-Keyward-Delivery"); h != body.ID {
			t.Errorf("delivery header %q, payload id %q", h, body.ID)
		}
		r.mu.Lock()
		r.ids[body.ID]++
		r.by[body.ID] = body.Event
		seen := r.seen
		r.mu.Unlock()
		if seen != nil {
			seen <- time.Now()
		}
		w.WriteHeader(204)
	}))
	srv.StartTLS()
	t.Cleanup(srv.Close)
	r.url = srv.URL + "/hook"
	r.caFile = filepath.Join(t.TempDir(), "receiver.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	if err := os.WriteFile(r.caFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	return r
}

// counts answers, per event name, the distinct event ids received and the repeats.
func (r *webhookReceiver) counts() (distinct map[string]int, repeats int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	distinct = map[string]int{}
	for id, n := range r.ids {
		distinct[r.by[id]]++
		repeats += n - 1
	}
	return distinct, repeats
}

// TestAcknowledgedChangesSurviveSIGKILL makes 1,000 mixed changes (client logins, license
// activations, variable updates, app updates) on a node with a CUSTOM webhook to a local
// receiver, SIGKILLs the node as soon as the last one is answered, and restarts it: every
// acknowledged change has its log entry, exactly once, and its webhook delivery reaches
// the receiver (repeats only of deliveries cut by the kill mid-send, which the receiver
// drops by id), and every audited one (the owner's variable creations and updates, app updates,
// and a few users bulk, users import and licenses add-time requests) its audit entry, exactly once, in a chain `keyward audit verify` finds whole. Both engine pairs;
// on FerretDB (slow on this shared machine) 200 changes, or 4 ×
// KEYWARD_TEST_SIGKILL_FERRET_EACH (250 for the 1,000).
// KEYWARD_TEST_SIGKILL_BINARY runs another build (the
// figures of the release before the event log come from it).
//
// The two pairs run at once, but only one makes its changes at a time (changing): each spends
// most of its time waiting for the webhook deliveries the killed node had claimed, which
// are sent again only when their lease (KEYWARD_WEBHOOK_LEASE, integrations.MinLease here)
// ends, while both making changes at once on a loaded machine left a login answered 503.
func TestAcknowledgedChangesSurviveSIGKILL(t *testing.T) {
	var changing sync.Mutex
	if b := os.Getenv("KEYWARD_TEST_SIGKILL_BINARY"); b != "" {
		// Set before the pairs start, put back after both ended (a cleanup: the parallel
		// pairs run after this function returns).
		saved := binary
		binary = b
		t.Cleanup(func() { binary = saved })
	}
	t.Run("sqlite+memory", func(t *testing.T) {
		t.Parallel()
		testChangesSurviveSIGKILL(t, 250, &changing, []string{"KEYWARD_DATA_DIR=" + t.TempDir()})
	})
	t.Run("mongo+redis", func(t *testing.T) {
		t.Parallel()
		each := 50
		if v, err := strconv.Atoi(os.Getenv("KEYWARD_TEST_SIGKILL_FERRET_EACH")); err == nil && v > 0 {
			each = v
		}
		testChangesSurviveSIGKILL(t, each, &changing, []string{"KEYWARD_DATA_DIR=" + t.TempDir(),
			"KEYWARD_MONGO_URI=" + testenv.MongoURI(t), "KEYWARD_MONGO_DATABASE=" + testenv.UniqueName("kwtest_"),
			"KEYWARD_REDIS_URL=" + testenv.RedisURL(t), "KEYWARD_REDIS_PREFIX=" + testenv.UniqueName("kwtest:") + ":",
			"KEYWARD_JWT_SECRET=" + strings.Repeat("e", 40), "KEYWARD_SECRETS_KEY=" + strings.Repeat("k", 40)})
	})
}

// bulkChanges is how many users bulk and users import requests the SIGKILL mix ends with.
const bulkChanges = 3

// testChangesSurviveSIGKILL makes each changes of each of the four kinds, holding changing
// from the node's start until it is killed.
func testChangesSurviveSIGKILL(t *testing.T, each int, changing *sync.Mutex, env []string) {
	changing.Lock()
	held := true
	defer func() {
		if held {
			changing.Unlock()
		}
	}()
	rc := startReceiver(t)
	// The deliveries the killed node had claimed are sent again when their lease ends: the
	// shortest a node may be given, not the default minute.
	env = append(env, "KEYWARD_TRUSTED_PROXIES=127.0.0.1/32", "KEYWARD_WEBHOOKS_ALLOW_PRIVATE=true", "KEYWARD_WEBHOOKS_CA_FILE="+rc.caFile,
		"KEYWARD_WEBHOOK_LEASE="+integrations.MinLease.String())
	admin := exec.Command(binary, "admin", "create", "--username", "owner", "--email", "owner@example.com",
		"--password", "Owner-Pass-12", "--role", "admin")
	admin.Env = append(os.Environ(), env...)
	if out, err := admin.CombinedOutput(); err != nil {
		t.Fatalf("admin create: %v\n%s", err, out)
	}
	plan := exec.Command(binary, "admin", "set", "--username", "owner", "--plan", "business")
	plan.Env = admin.Env
	if out, err := plan.CombinedOutput(); err != nil {
		t.Fatalf("admin set: %v\n%s", err, out)
	}
	n := startNode(t, env)
	owner := call(t, "POST", n.url+"/api/auth/login", "", map[string]string{"username": "owner", "password": "Owner-Pass-12"}).data(200)["token"].(string)
	app := call(t, "POST", n.url+"/api/apps", owner, map[string]string{"name": "Crash"}).data(201)
	appID, secret := app["id"].(string), app["secret"].(string)
	base := n.url + "/api/apps/" + appID
	watched := []string{"user.login", "license.activate", "variable.update", "app.update"}
	call(t, "POST", base+"/integrations", owner, map[string]any{"name": "Receiver", "type": "CUSTOM",
		"webhookUrl": rc.url, "events": watched}).data(201)

	userIDs := make([]string, each)
	for i := range each {
		userIDs[i] = call(t, "POST", base+"/users", owner, map[string]string{"username": fmt.Sprintf("user%d", i), "password": "User-Pass-12"}).data(201)["id"].(string)
	}
	var keys []string
	for len(keys) < each {
		d := call(t, "POST", base+"/licenses", owner, map[string]any{"count": min(100, each-len(keys))}).data(201)
		for _, l := range d["licenses"].([]any) {
			keys = append(keys, l.(map[string]any)["key"].(string))
		}
	}
	varID := call(t, "POST", base+"/variables", owner, map[string]string{"key": "motd", "value": "hello"}).data(201)["id"].(string)

	// 1,000 changes from 16 workers; each must be acknowledged.
	work := make(chan int)
	var wg sync.WaitGroup
	errs := make(chan error, 4*each)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				k := i / 4
				ip := fmt.Sprintf("10.%d.%d.%d", i%4, k/200, k%200+1)
				var err error
				switch i % 4 {
				case 0:
					_, err = sdkLogin(n.url, secret, ip, fmt.Sprintf("user%d", k), "User-Pass-12")
				case 1:
					err = sdkLicense(n.url, secret, ip, keys[k])
				case 2: // a creation and an update, each audited with its change
					err = ownerCall("POST", base+"/variables", owner, map[string]string{"key": fmt.Sprintf("k-%d", k), "value": "x"})
					if err == nil {
						err = ownerCall("PATCH", base+"/variables/"+varID, owner, map[string]string{"value": fmt.Sprintf("v-%d", k)})
					}
				case 3:
					err = ownerCall("PATCH", base, owner, map[string]string{"description": fmt.Sprintf("d-%d", k)})
					// Near the end, the bulk routes whose records are each changed in a
					// write of their own (their entry stored in parts with the writes).
					if err == nil && k >= each-bulkChanges {
						err = ownerCall("POST", base+"/users/bulk", owner, map[string]any{"action": "extend", "duration": 3600,
							"ids": []string{userIDs[k], userIDs[each-1-k]}})
					}
					if err == nil && k >= each-bulkChanges {
						err = ownerCall("POST", base+"/users/import", owner, map[string]any{"users": []map[string]string{
							{"username": fmt.Sprintf("imp-%d-a", k), "password": "User-Pass-12"}, {"username": fmt.Sprintf("imp-%d-b", k), "password": "User-Pass-12"}}})
					}
					if err == nil && k == each-1 {
						err = ownerCall("POST", base+"/licenses/add-time", owner, map[string]any{"seconds": 60})
					}
				}
				if err != nil {
					errs <- fmt.Errorf("change %d: %w", i, err)
				}
			}
		}()
	}
	for i := range 4 * each {
		work <- i
	}
	close(work)
	wg.Wait()
	if err := n.cmd.Process.Signal(os.Kill); err != nil {
		t.Fatal(err)
	}
	n.done <- <-n.done
	changing.Unlock()
	held = false
	close(errs)
	for err := range errs {
		t.Fatal(err) // a change not acknowledged: the counts below would not hold
	}

	want := map[string]int{"user.login": 2 * each, "license.activate": each, "variable.update": each, "app.update": each}
	n = startNode(t, env)
	base = n.url + "/api/apps/" + appID
	logged := func() map[string]int {
		got := map[string]int{}
		for _, ev := range watched {
			got[ev] = int(call(t, "GET", base+"/logs?limit=1&event="+ev, owner, nil).data(200)["total"].(float64))
		}
		return got
	}
	var gotLogs, gotHooks map[string]int
	var repeats int
	for i := 0; ; i++ {
		gotLogs = logged()
		gotHooks, repeats = rc.counts()
		done := true
		for _, ev := range watched {
			done = done && gotLogs[ev] >= want[ev] && gotHooks[ev] >= want[ev]
		}
		if done || i == 300 {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("acknowledged %v; after SIGKILL and restart: log entries %v, webhook events received %v (%d repeats)", want, gotLogs, gotHooks, repeats)
	for _, ev := range watched {
		if gotLogs[ev] != want[ev] {
			t.Errorf("%s: %d log entries, want exactly %d", ev, gotLogs[ev], want[ev])
		}
		if gotHooks[ev] != want[ev] {
			t.Errorf("%s: webhook deliveries of %d distinct events, want %d", ev, gotHooks[ev], want[ev])
		}
	}
	if repeats > 32 {
		t.Errorf("%d deliveries repeated; only ones in flight at the kill may be", repeats)
	}
	// Audit entries: the app's creation and its updates, the variables' creations and the
	// first one's updates, the users' creations and the bulk requests on users (extend,
	// import), the keys' batches and the add-time, each once.
	// On MongoDB an entry staged and confirmed by its change whose append the kill cut
	// is appended by the restarted node's recovery (storage.AuditRecoverer), at start.
	for rt, want := range map[string]int{"apps": each + 1, "variables": 2*each + 1, "users": each + 2*bulkChanges,
		"licenses": (each+99)/100 + 1} {
		var total float64
		for i := 0; i < 100; i++ {
			if total = call(t, "GET", n.url+"/api/audit?limit=1&appId="+appID+"&recordType="+rt, owner, nil).data(200)["total"].(float64); int(total) >= want {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if int(total) != want {
			t.Errorf("audit entries of %s: %v, want exactly %d (the creations and %d acknowledged updates or bulk requests)", rt, total, want, each)
		}
	}
	n.stop(t)
	verify := exec.Command(binary, "audit", "verify")
	verify.Env = append(os.Environ(), env...)
	if out, err := verify.CombinedOutput(); err != nil || !strings.Contains(string(out), " 0 broken") {
		t.Errorf("keyward audit verify after SIGKILL: %v\n%s", err, out)
	}
}

// sdkLicense runs init, nonce and a license login as an SDK on the address ip.
func sdkLicense(base, secret, ip, key string) error {
	d, err := clientPost(base, ip, "init", "", map[string]string{"secret": secret, "version": "1.0.0", "hwid": "h-" + ip})
	if err != nil {
		return err
	}
	session := d["sessionToken"].(string)
	if d, err = clientPost(base, ip, "nonce", "", map[string]string{"sessionToken": session}); err != nil {
		return err
	}
	_, err = clientPost(base, ip, "license", d["nonce"].(string), map[string]string{"sessionToken": session, "licenseKey": key, "hwid": "h-" + ip})
	return err
}

func clientPost(base, ip, path, nonce string, body map[string]string) (map[string]any, error) {
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", base+"/api/client/"+path, strings.NewReader(string(raw)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-For", ip)
	if nonce != "" {
		req.Header.Set("X-Nonce", nonce)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if resp.StatusCode != 200 {
		return nil, fmt.Errorf("%s: %d %v", path, resp.StatusCode, out)
	}
	return out["data"].(map[string]any), nil
}

// ownerCall sends a dashboard request and wants a 200.
func ownerCall(method, url, token string, body any) error {
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, url, strings.NewReader(string(raw)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s %s: %d %s", method, url, resp.StatusCode, b)
	}
	return nil
}

// TestNodeCutFromTheBusCatchesUpFromTheLog runs two nodes over one database whose cluster
// engines do not reach each other (two memory engines on one SQLite file; two Redis
// servers on one MongoDB database): node B hears nothing node A says on its bus. An app
// paused on node A still closes the app's client socket on node B, which reads the pause
// from the event log. Both engine pairs; the time it took is logged.
func TestNodeCutFromTheBusCatchesUpFromTheLog(t *testing.T) {
	t.Run("sqlite+memory", func(t *testing.T) {
		env := []string{"KEYWARD_DATA_DIR=" + t.TempDir()}
		testCutNodeCatchesUp(t, env, env)
	})
	t.Run("mongo+redis", func(t *testing.T) {
		env := []string{"KEYWARD_DATA_DIR=" + t.TempDir(), "KEYWARD_MONGO_URI=" + testenv.MongoURI(t),
			"KEYWARD_MONGO_DATABASE=" + testenv.UniqueName("kwtest_"),
			"KEYWARD_JWT_SECRET=" + strings.Repeat("f", 40), "KEYWARD_SECRETS_KEY=" + strings.Repeat("k", 40)}
		redisB, _ := startRedisServer(t)
		testCutNodeCatchesUp(t, append(env, "KEYWARD_REDIS_URL="+testenv.RedisURL(t), "KEYWARD_REDIS_PREFIX="+testenv.UniqueName("kwtest:")+":"),
			append(env, "KEYWARD_REDIS_URL=redis://"+redisB+"/0"))
	})
}

func testCutNodeCatchesUp(t *testing.T, envA, envB []string) {
	for _, args := range [][]string{
		{"admin", "create", "--username", "owner", "--email", "owner@example.com", "--password", "Owner-Pass-12"},
		{"admin", "set", "--username", "owner", "--plan", "business"},
	} {
		cmd := exec.Command(binary, args...)
		cmd.Env = append(os.Environ(), envA...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	a := startNode(t, envA)
	b := startNode(t, envB)
	token := call(t, "POST", a.url+"/api/auth/login", "", map[string]string{"username": "owner", "password": "Owner-Pass-12"}).data(200)["token"].(string)
	app := call(t, "POST", a.url+"/api/apps", token, map[string]string{"name": "Cut"}).data(201)
	appID, secret := app["id"].(string), app["secret"].(string)
	call(t, "POST", a.url+"/api/apps/"+appID+"/users", token, map[string]string{"username": "cid", "password": "pw-cid-123"}).data(201)

	session := clientLogin(t, b, secret, "cid", "pw-cid-123")
	client := dial(t, b, "/api/client/ws?token="+url.QueryEscape(session))
	ping(t, client)

	call(t, "PATCH", a.url+"/api/apps/"+appID, token, map[string]any{"paused": true}).data(200)
	paused := time.Now()
	_ = client.SetReadDeadline(time.Now().Add(20 * time.Second))
	for {
		if _, _, err := client.ReadMessage(); err != nil {
			var ce *websocket.CloseError
			if !errors.As(err, &ce) {
				t.Fatalf("socket on the cut node: %v, want closed by the server once the pause is read from the log", err)
			}
			t.Logf("socket on the cut node closed (%d %s) %v after the pause on the other node", ce.Code, ce.Text, time.Since(paused).Round(time.Millisecond))
			break
		}
	}
	a.stop(t)
	b.stop(t)
}

// BenchmarkEventToWebhook times, on an idle embedded node, an app update's event from the
// update's answer to its CUSTOM webhook delivery at a local receiver (one at a time), and
// reports the p50 and p99 in milliseconds.
func BenchmarkEventToWebhook(b *testing.B) {
	rc := startReceiver(b)
	rc.seen = make(chan time.Time, 1)
	env := []string{"KEYWARD_DATA_DIR=" + b.TempDir(), "KEYWARD_WEBHOOKS_ALLOW_PRIVATE=true", "KEYWARD_WEBHOOKS_CA_FILE=" + rc.caFile}
	admin := exec.Command(binary, "admin", "create", "--username", "owner", "--email", "owner@example.com", "--password", "Owner-Pass-12", "--role", "admin")
	admin.Env = append(os.Environ(), env...)
	if out, err := admin.CombinedOutput(); err != nil {
		b.Fatalf("admin create: %v\n%s", err, out)
	}
	n := startNodeTB(b, env)
	owner := callTB(b, "POST", n.url+"/api/auth/login", "", map[string]string{"username": "owner", "password": "Owner-Pass-12"})["token"].(string)
	appID := callTB(b, "POST", n.url+"/api/apps", owner, map[string]string{"name": "Latency"})["id"].(string)
	callTB(b, "POST", n.url+"/api/apps/"+appID+"/integrations", owner, map[string]any{"name": "Receiver", "type": "CUSTOM",
		"webhookUrl": rc.url, "events": []string{"app.update"}})
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := range b.N {
		if err := ownerCall("PATCH", n.url+"/api/apps/"+appID, owner, map[string]string{"description": fmt.Sprint("d", i)}); err != nil {
			b.Fatal(err)
		}
		answered := time.Now()
		select {
		case at := <-rc.seen:
			lat = append(lat, at.Sub(answered))
		case <-time.After(30 * time.Second):
			b.Fatal("no delivery within 30 s")
		}
		time.Sleep(20 * time.Millisecond) // idle between events
	}
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
	_ = n.cmd.Process.Kill()
}

// startNodeTB and callTB are startNode and call for benchmarks.
func startNodeTB(tb testing.TB, env []string) *node {
	tb.Helper()
	addr := freeAddrTB(tb)
	cmd := exec.Command(binary, "serve")
	testenv.DiesWithTest(cmd)
	cmd.Env = append(append(os.Environ(), env...), "KEYWARD_ADDR="+addr, "KEYWARD_ARGON2_MEMORY_KIB=1024", "KEYWARD_ARGON2_ITERATIONS=1")
	n := &node{cmd: cmd, url: "http://" + addr, stderr: &testenv.LogBuffer{}, done: make(chan error, 1)}
	cmd.Stderr = n.stderr
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	go func() { n.done <- cmd.Wait() }()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-n.done
	})
	for i := 0; ; i++ {
		if resp, err := http.Get(n.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return n
			}
		}
		if i > 600 {
			tb.Fatalf("node not ready:\n%s", n.stderr)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func freeAddrTB(tb testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

func callTB(tb testing.TB, method, url, token string, body any) map[string]any {
	tb.Helper()
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, url, strings.NewReader(string(raw)))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode >= 300 {
		tb.Fatalf("%s %s: %d %v %v", method, url, resp.StatusCode, out, err)
	}
	return out["data"].(map[string]any)
}
