package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/keyward/keyward/internal/testenv"
)

// registerBurst is the size of the concurrent register burst of the tests below.
const registerBurst = 50

// sdkPost sends an SDK call from the address ip (the node trusts the loopback proxy's
// X-Forwarded-For) and answers its status and decoded envelope.
func sdkPost(base, path, ip, nonce string, body map[string]string) (int, map[string]any, error) {
	raw, _ := json.Marshal(body)
	req, _ := http.NewRequest("POST", base+"/api/client/"+path, bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Forwarded-For", ip)
	if nonce != "" {
		req.Header.Set("X-Nonce", nonce)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	var out map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return 0, nil, fmt.Errorf("%s: %w", path, err)
	}
	return resp.StatusCode, out, nil
}

// sdkReady runs init and nonce as an SDK on the address ip and answers the session token
// and the nonce of its next call.
func sdkReady(base, secret, ip string) (session, nonce string, err error) {
	data := func(path string, body map[string]string) (map[string]any, error) {
		status, out, err := sdkPost(base, path, ip, "", body)
		if err != nil {
			return nil, err
		}
		if status != 200 {
			return nil, fmt.Errorf("%s: %d %v", path, status, out)
		}
		return out["data"].(map[string]any), nil
	}
	d, err := data("init", map[string]string{"secret": secret, "version": "1.0.0", "hwid": "h-" + ip})
	if err != nil {
		return "", "", err
	}
	session = d["sessionToken"].(string)
	if d, err = data("nonce", map[string]string{"sessionToken": session}); err != nil {
		return "", "", err
	}
	return session, d["nonce"].(string), nil
}

// createLicense makes one license with the settings in body and answers its key and id.
func createLicense(t *testing.T, n *node, token, appID string, body map[string]any) (key, id string) {
	t.Helper()
	lics := call(t, "POST", n.url+"/api/apps/"+appID+"/licenses", token, body).data(201)
	raw, _ := json.Marshal(lics)
	var created struct {
		Licenses []struct {
			Key string `json:"key"`
			ID  string `json:"id"`
		} `json:"licenses"`
	}
	if err := json.Unmarshal(raw, &created); err != nil || len(created.Licenses) != 1 {
		t.Fatalf("created licenses: %s", raw)
	}
	return created.Licenses[0].Key, created.Licenses[0].ID
}

// usernames answers the names of the app's users.
func usernames(t *testing.T, n *node, token, appID string) map[string]bool {
	t.Helper()
	list := call(t, "GET", n.url+"/api/apps/"+appID+"/users?limit=100", token, nil).data(200)
	items, _ := list["users"].([]any)
	exists := map[string]bool{}
	for _, it := range items {
		exists[it.(map[string]any)["username"].(string)] = true
	}
	return exists
}

// registerBurstOneKey sends registerBurst concurrent registers, each with its own username
// and address, all with one key of maxUses 1, spread over the nodes; then checks that a
// user exists for exactly the calls answered OK (a refused register changes nothing), that
// exactly one was, and, unless allowUnavailable, that none was answered 503.
func registerBurstOneKey(t *testing.T, nodes []*node, token string) {
	t.Helper()
	app := call(t, "POST", nodes[0].url+"/api/apps", token, map[string]string{"name": "Burst"}).data(201)
	appID, secret := app["id"].(string), app["secret"].(string)
	key, _ := createLicense(t, nodes[0], token, appID, map[string]any{"count": 1, "maxUses": 1})

	type answer struct {
		status int
		code   string
		err    error
	}
	// Every session is made first, so that the registers themselves arrive together.
	type ready struct{ base, ip, session, nonce string }
	sessions := make([]ready, registerBurst)
	for i := range sessions {
		r := ready{base: nodes[i%len(nodes)].url, ip: fmt.Sprintf("192.0.2.%d", i+1)}
		var err error
		if r.session, r.nonce, err = sdkReady(r.base, secret, r.ip); err != nil {
			t.Fatal(err)
		}
		sessions[i] = r
	}
	answers := make([]answer, registerBurst)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range answers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, a := sessions[i], &answers[i]
			<-start
			var out map[string]any
			a.status, out, a.err = sdkPost(r.base, "register", r.ip, r.nonce, map[string]string{"sessionToken": r.session,
				"username": fmt.Sprintf("burst%d", i), "password": "Burst-Pass-12", "licenseKey": key, "hwid": "h-" + r.ip})
			if e, ok := out["error"].(map[string]any); ok {
				a.code, _ = e["code"].(string)
			}
		}()
	}
	close(start)
	wg.Wait()

	codes := map[string]int{}
	ok := 0
	for i, a := range answers {
		if a.err != nil {
			t.Fatalf("register %d: %v", i, a.err)
		}
		if a.status == 200 {
			ok++
			codes["OK"]++
		} else {
			codes[fmt.Sprintf("%d %s", a.status, a.code)]++
		}
	}
	t.Logf("%d registers with one single-use key over %d node(s): %v", registerBurst, len(nodes), codes)
	if ok != 1 {
		t.Errorf("%d registers succeeded with a single-use key, want 1: %v", ok, codes)
	}
	for c, n := range codes {
		if strings.HasPrefix(c, "503") {
			t.Errorf("%d registers answered %s under a burst on healthy servers", n, c)
		}
	}

	exists := usernames(t, nodes[0], token, appID)
	for i, a := range answers {
		name := fmt.Sprintf("burst%d", i)
		if a.status == 200 && !exists[name] {
			t.Errorf("%s was answered OK but has no user", name)
		}
		if a.status != 200 && exists[name] {
			t.Errorf("%s was answered %d %s but its user exists", name, a.status, a.code)
		}
	}
}

// TestRegisterBurstOneKeyTwoNodes: 50 concurrent registers with one single-use key on two
// cluster nodes over one MongoDB-wire database (FerretDB) and Redis: one succeeds, the
// others are refused (none with a 503: the servers are healthy, only busy), and exactly
// the one answered OK has a user. The FerretDB is the test's own, reached with the
// production connection settings (the shared one's URI lengthens the connect timeout).
func TestRegisterBurstOneKeyTwoNodes(t *testing.T) {
	mongoURI, ferret := testenv.StartFerretDB(t)
	// FerretDB at the lowest priority: it gets the CPU the nodes' password hashes leave, as a
	// database on a busy shared host does; healthy but slow is not down.
	if err := syscall.Setpriority(syscall.PRIO_PROCESS, ferret.Process.Pid, 19); err != nil {
		t.Fatal(err)
	}
	// The production password hashes: 50 of them keep both cores of the test machine busy,
	// which is the load under which the pool and the monitor must not call FerretDB down.
	a, b, token := socketCluster(t, "KEYWARD_TRUSTED_PROXIES=127.0.0.1/32", "KEYWARD_MONGO_URI="+mongoURI,
		"KEYWARD_ARGON2_MEMORY_KIB=19456", "KEYWARD_ARGON2_ITERATIONS=2")
	registerBurstOneKey(t, []*node{a, b}, token)
	if t.Failed() {
		t.Logf("node A:\n%s\nnode B:\n%s", a.stderr, b.stderr)
	}
}

// TestRegisterBurstOneKeyEmbedded is the same burst on an embedded node (SQLite and the
// in-memory cluster engine).
func TestRegisterBurstOneKeyEmbedded(t *testing.T) {
	n, token := embeddedBusinessNode(t)
	registerBurstOneKey(t, []*node{n}, token)
}

// embeddedBusinessNode starts an embedded node (SQLite and the in-memory cluster engine)
// that trusts the loopback proxy, with a Business owner signed in.
func embeddedBusinessNode(t *testing.T) (*node, string) {
	t.Helper()
	dir := t.TempDir()
	env := []string{"KEYWARD_DATA_DIR=" + dir, "KEYWARD_TRUSTED_PROXIES=127.0.0.1/32"}
	n := startNode(t, env)
	for _, args := range [][]string{
		{"admin", "create", "--username", "owner", "--email", "owner@example.com", "--password", "Owner-Pass-12", "--data-dir", dir},
		{"admin", "set", "--username", "owner", "--plan", "business", "--data-dir", dir},
	} {
		cmd := exec.Command(binary, args...)
		cmd.Env = append(os.Environ(), env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	return n, call(t, "POST", n.url+"/api/auth/login", "", map[string]string{"username": "owner", "password": "Owner-Pass-12"}).data(200)["token"].(string)
}

// TestRefusedRegisterChangesNothing: a register whose sign-in is refused after the user was
// made and the key used (the key's only seat is taken) leaves no user and gives the use
// back, on both engine pairs (the second over two processes: refused on the node that did
// not serve the first).
func TestRefusedRegisterChangesNothing(t *testing.T) {
	embedded, embeddedToken := embeddedBusinessNode(t)
	a, b, clusterToken := socketCluster(t, "KEYWARD_TRUSTED_PROXIES=127.0.0.1/32")
	for _, pair := range []struct {
		name   string
		first  *node
		second *node
		token  string
	}{{"sqlite+memory", embedded, embedded, embeddedToken}, {"mongo+redis", a, b, clusterToken}} {
		t.Run(pair.name, func(t *testing.T) {
			token := pair.token
			appID, secret := func() (string, string) {
				app := call(t, "POST", pair.first.url+"/api/apps", token, map[string]string{"name": "Seats"}).data(201)
				return app["id"].(string), app["secret"].(string)
			}()
			key, licID := createLicense(t, pair.first, token, appID, map[string]any{"count": 1, "maxUses": 5, "maxSeats": 1})
			register := func(n *node, ip, username string) (int, string) {
				t.Helper()
				session, nonce, err := sdkReady(n.url, secret, ip)
				if err != nil {
					t.Fatal(err)
				}
				status, out, err := sdkPost(n.url, "register", ip, nonce, map[string]string{"sessionToken": session,
					"username": username, "password": "Seat-Pass-12", "licenseKey": key, "hwid": "h-" + ip})
				if err != nil {
					t.Fatal(err)
				}
				e, _ := out["error"].(map[string]any)
				code, _ := e["code"].(string)
				return status, code
			}
			if status, code := register(pair.first, "192.0.2.1", "first"); status != 200 {
				t.Fatalf("first register: %d %s", status, code)
			}
			if status, code := register(pair.second, "192.0.2.2", "second"); status == 200 || code != "SEATS_FULL" {
				t.Fatalf("second register while the only seat is taken: %d %s, want SEATS_FULL", status, code)
			}
			if names := usernames(t, pair.first, token, appID); !names["first"] || names["second"] {
				t.Errorf("users after a refused register: %v, want only first", names)
			}
			lic := call(t, "GET", pair.first.url+"/api/apps/"+appID+"/licenses/"+licID, token, nil).data(200)
			if lic["usedCount"] != float64(1) || lic["usedBy"] != "first" {
				t.Errorf("license after a refused register: usedCount %v usedBy %v, want 1 first", lic["usedCount"], lic["usedBy"])
			}
		})
	}
}
