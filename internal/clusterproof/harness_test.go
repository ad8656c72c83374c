package clusterproof_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/keyward/keyward/internal/testenv"
)

// binary is the keyward program TestMain builds; every node is a process of it.
var binary string

func TestMain(m *testing.M) { testenv.RunWithKeyward(m, func(b string) { binary = b }) }

// httpClient bounds every request: a request that takes this long hangs, and fails the test.
var httpClient = &http.Client{Timeout: 15 * time.Second, Transport: &http.Transport{MaxIdleConnsPerHost: 64}}

// --- processes --------------------------------------------------------------------

// syncBuffer collects a process's log while it runs.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.buf.Len() > 1<<20 { // keep the last MiB or so
		b.buf.Next(b.buf.Len() / 2)
	}
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// node is one `keyward serve` process. Its address and data dir stay the same across
// restarts.
type node struct {
	name, addr, url string
	env             []string
	log             *syncBuffer
	cmd             *exec.Cmd
	done            chan error // receives cmd.Wait's result once
}

// cluster is a set of nodes sharing one MongoDB database and one Redis key prefix, with a
// Business owner signed in.
type cluster struct {
	t     *testing.T
	nodes []*node
	env   []string
	token string // the owner's dashboard JWT
}

// freeAddr answers a loopback address that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// newCluster starts n nodes over the test FerretDB and redisURL; extra settings go to all.
func newCluster(t *testing.T, n int, redisURL string, extra ...string) *cluster {
	t.Helper()
	return newClusterOn(t, testenv.MongoURI(t), n, redisURL, extra...)
}

// ownFerretDB starts a FerretDB of the test's own (testenv.StartFerretDB: in memory, with a
// rarer garbage collection), so that a test that loads the database does not share it.
// Its nodes reach it with the test settings of the shared one (testenv.RelaxMongoURI):
// the production connect timeout (250 ms) also bounds the driver's monitor checks, and a
// node whose checks of a FerretDB busy with the test's load on a loaded machine time out
// twice in a row calls it down: it fails its requests in flight with 503 and makes its
// pool of 128 connections again, which loads FerretDB further. (At load 15 a node still
// did so now and then at 2 s.)
func ownFerretDB(t *testing.T) string {
	t.Helper()
	uri, _ := testenv.StartFerretDB(t)
	return testenv.RelaxMongoURI(t, uri)
}

// newClusterOn is newCluster over the MongoDB-wire server at mongoURI.
func newClusterOn(t *testing.T, mongoURI string, n int, redisURL string, extra ...string) *cluster {
	t.Helper()
	c := &cluster{t: t, env: append([]string{
		"KEYWARD_MONGO_URI=" + mongoURI,
		"KEYWARD_MONGO_DATABASE=" + testenv.UniqueName("kwproof_"),
		"KEYWARD_REDIS_URL=" + redisURL,
		"KEYWARD_REDIS_PREFIX=" + testenv.UniqueName("kwproof:") + ":",
		"KEYWARD_JWT_SECRET=" + strings.Repeat("p", 40),
		"KEYWARD_SECRETS_KEY=" + strings.Repeat("k", 40),
		// The test is every client: it picks each one's address with X-Forwarded-For.
		"KEYWARD_TRUSTED_PROXIES=127.0.0.1/32",
		"KEYWARD_ARGON2_MEMORY_KIB=1024", "KEYWARD_ARGON2_ITERATIONS=1",
		"KEYWARD_LOG_LEVEL=warn",
		"KEYWARD_SHUTDOWN_TIMEOUT=10s",
	}, extra...)}
	for i := range n {
		nd := &node{name: string(rune('A' + i)), addr: freeAddr(t)}
		nd.url = "http://" + nd.addr
		nd.env = append(append(os.Environ(), c.env...), "KEYWARD_ADDR="+nd.addr, "KEYWARD_DATA_DIR="+t.TempDir())
		c.nodes = append(c.nodes, nd)
		c.start(nd)
	}
	for _, args := range [][]string{
		{"admin", "create", "--username", "owner", "--email", "owner@example.com", "--password", "Owner-Pass-12"},
		{"admin", "set", "--username", "owner", "--plan", "business"},
	} {
		cmd := exec.Command(binary, args...)
		cmd.Env = append(append(os.Environ(), c.env...), "KEYWARD_DATA_DIR="+t.TempDir())
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%v: %v\n%s", args, err, out)
		}
	}
	c.token = c.call(c.nodes[0], "POST", "/api/auth/login", "", map[string]string{"username": "owner", "password": "Owner-Pass-12"}).data(200)["token"].(string)
	return c
}

// start runs nd and waits until /readyz answers 200.
func (c *cluster) start(nd *node) {
	t := c.t
	t.Helper()
	nd.log = &syncBuffer{}
	nd.cmd = exec.Command(binary, "serve")
	testenv.DiesWithTest(nd.cmd)
	nd.cmd.Env = nd.env
	nd.cmd.Stdout, nd.cmd.Stderr = nd.log, nd.log
	if err := nd.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	nd.done = make(chan error, 1)
	cmd, done := nd.cmd, nd.done
	go func() { done <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		err := <-done
		done <- err
		if t.Failed() {
			t.Logf("node %s log (last lines):\n%s", nd.name, tail(nd.log.String(), 30))
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		if resp, err := httpClient.Get(nd.url + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return
			}
		}
		select {
		case err := <-done:
			done <- err
			t.Fatalf("node %s exited while starting: %v\n%s", nd.name, err, nd.log)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %s not ready within 60 s:\n%s", nd.name, nd.log)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop sends SIGTERM and waits for a clean exit.
func (c *cluster) stop(nd *node) {
	t := c.t
	t.Helper()
	if err := nd.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-nd.done:
		nd.done <- err
		if err != nil {
			t.Fatalf("node %s exit after SIGTERM: %v\n%s", nd.name, err, tail(nd.log.String(), 30))
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("node %s still running 30 s after SIGTERM:\n%s", nd.name, tail(nd.log.String(), 30))
	}
}

// kill ends nd with SIGKILL: no shutdown, no release of anything.
func (c *cluster) kill(nd *node) {
	c.t.Helper()
	_ = nd.cmd.Process.Kill()
	err := <-nd.done
	nd.done <- err
}

func tail(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

// --- HTTP ---------------------------------------------------------------------------

// reply is a decoded JSON answer.
type reply struct {
	t      *testing.T
	what   string
	status int
	body   map[string]any
}

// data answers the envelope's data, failing unless the status is want. Test goroutine only.
func (r reply) data(want int) map[string]any {
	r.t.Helper()
	d, err := r.tryData(want)
	if err != nil {
		r.t.Fatal(err)
	}
	return d
}

// tryData answers the envelope's data, or an error unless the status is want.
func (r reply) tryData(want int) (map[string]any, error) {
	if r.status != want {
		return nil, fmt.Errorf("%s: status %d, want %d: %v", r.what, r.status, want, r.body)
	}
	d, _ := r.body["data"].(map[string]any)
	return d, nil
}

// code answers the error envelope's code.
func (r reply) code() string {
	e, _ := r.body["error"].(map[string]any)
	s, _ := e["code"].(string)
	return s
}

// req is one request: the client address it comes from, an optional bearer token and nonce.
type req struct {
	ip, token, nonce string
}

// send makes a JSON request; a transport error (including the client timeout) is
// answered as status 0 with the error in body["transport"].
func send(t *testing.T, nd *node, method, path string, r req, body any) reply {
	t.Helper()
	raw, _ := json.Marshal(body)
	hr, _ := http.NewRequest(method, nd.url+path, bytes.NewReader(raw)) // valid by construction
	hr.Header.Set("Content-Type", "application/json")
	if r.ip != "" {
		hr.Header.Set("X-Forwarded-For", r.ip)
	}
	if r.token != "" {
		hr.Header.Set("Authorization", "Bearer "+r.token)
	}
	if r.nonce != "" {
		hr.Header.Set("X-Nonce", r.nonce)
	}
	what := fmt.Sprintf("%s %s on %s", method, path, nd.name)
	resp, err := httpClient.Do(hr)
	if err != nil {
		return reply{t: t, what: what, body: map[string]any{"transport": err.Error()}}
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if err := json.Unmarshal(b, &out); err != nil {
		out = map[string]any{"notJSON": string(b)}
	}
	return reply{t: t, what: what, status: resp.StatusCode, body: out}
}

// call is a dashboard request by the owner from the test's own address.
func (c *cluster) call(nd *node, method, path, token string, body any) reply {
	c.t.Helper()
	return send(c.t, nd, method, path, req{ip: "192.0.2.1", token: token}, body)
}

// owner is a dashboard request with the owner's token.
func (c *cluster) owner(nd *node, method, path string, body any) reply {
	c.t.Helper()
	return c.call(nd, method, path, c.token, body)
}

// newApp creates an application and answers its id and secret.
func (c *cluster) newApp(name string) (id, secret string) {
	c.t.Helper()
	d := c.owner(c.nodes[0], "POST", "/api/apps", map[string]string{"name": name}).data(201)
	return d["id"].(string), d["secret"].(string)
}

// newUser creates an application user and answers its id.
func (c *cluster) newUser(nd *node, appID, username, password string) string {
	c.t.Helper()
	return c.owner(nd, "POST", "/api/apps/"+appID+"/users", map[string]string{"username": username, "password": password}).data(201)["id"].(string)
}

// clientIP answers a distinct client address for index i (per-IP limits are per client).
func clientIP(i int) string { return fmt.Sprintf("10.%d.%d.%d", 1+i/65536, (i/256)%256, i%256) }

// program is a shipped program's session: the client address it calls from and its token.
type program struct {
	ip, session string
}

// nonce fetches a one-time nonce on nd.
func (p program) nonce(t *testing.T, nd *node) reply {
	t.Helper()
	return send(t, nd, "POST", "/api/client/nonce", req{ip: p.ip}, map[string]string{"sessionToken": p.session})
}

// signIn runs init, nonce and login on nd as an SDK does. Test goroutine only.
func signIn(t *testing.T, nd *node, secret, username, password, ip string) program {
	t.Helper()
	p, err := trySignIn(t, nd, secret, username, password, ip)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// trySignIn is signIn answering its error, for workers.
func trySignIn(t *testing.T, nd *node, secret, username, password, ip string) (program, error) {
	p := program{ip: ip}
	d, err := send(t, nd, "POST", "/api/client/init", req{ip: ip}, map[string]string{"secret": secret, "version": "1.0.0", "hwid": "hw-" + username}).tryData(200)
	if err != nil {
		return p, err
	}
	p.session, _ = d["sessionToken"].(string)
	d, err = p.nonce(t, nd).tryData(200)
	if err != nil {
		return p, err
	}
	nonce, _ := d["nonce"].(string)
	_, err = send(t, nd, "POST", "/api/client/login", req{ip: ip, nonce: nonce}, map[string]string{"sessionToken": p.session, "username": username, "password": password}).tryData(200)
	return p, err
}

// heartbeat sends a nonce and a heartbeat on nd; the reply is the heartbeat's, or the
// nonce's when that failed.
func (p program) heartbeat(t *testing.T, nd *node) reply {
	t.Helper()
	n := p.nonce(t, nd)
	d, err := n.tryData(200)
	if err != nil {
		return n
	}
	nonce, _ := d["nonce"].(string)
	return send(t, nd, "POST", "/api/client/heartbeat", req{ip: p.ip, nonce: nonce}, map[string]string{"sessionToken": p.session})
}

// --- sockets ------------------------------------------------------------------------

// sock is a client socket with a reader that queues its messages.
type sock struct {
	t      *testing.T
	conn   *websocket.Conn
	mu     sync.Mutex
	queue  []map[string]any
	signal chan struct{} // a message arrived or the socket closed
	closed chan struct{}
	code   int // the close code, once closed (0: closed without a close frame)
	// lastReason is the reason of the last force_logout received (a refusal's words).
	lastReason string
}

// dialClient dials p's client socket on nd, from p's address.
func dialClient(nd *node, p program) (*websocket.Conn, *http.Response, error) {
	h := http.Header{}
	h.Set("X-Forwarded-For", p.ip)
	d := websocket.Dialer{HandshakeTimeout: 15 * time.Second}
	return d.Dial("ws"+strings.TrimPrefix(nd.url, "http")+"/api/client/ws?token="+url.QueryEscape(p.session), h)
}

// dialSocket opens a client socket on nd for p; an error is a refused upgrade.
func dialSocket(t *testing.T, nd *node, p program) (*sock, error) {
	t.Helper()
	conn, resp, err := dialClient(nd, p)
	if err != nil {
		if resp != nil {
			return nil, fmt.Errorf("upgrade refused with %d: %w", resp.StatusCode, err)
		}
		return nil, err
	}
	s := &sock{t: t, conn: conn, signal: make(chan struct{}, 1), closed: make(chan struct{})}
	go s.read()
	t.Cleanup(func() {
		_ = conn.Close()
		<-s.closed
	})
	return s, nil
}

// read queues messages until the socket ends; it stops when the connection closes.
func (s *sock) read() {
	defer close(s.closed)
	for {
		var m map[string]any
		if err := s.conn.ReadJSON(&m); err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) {
				s.mu.Lock()
				s.code = ce.Code
				s.mu.Unlock()
			}
			return
		}
		s.mu.Lock()
		s.queue = append(s.queue, m)
		if m["type"] == "force_logout" {
			d, _ := m["data"].(map[string]any)
			s.lastReason = fmt.Sprintf("%v (%v)", d["reason"], d["code"])
		}
		s.mu.Unlock()
		select {
		case s.signal <- struct{}{}:
		default:
		}
	}
}

func (s *sock) send(m map[string]any) {
	s.mu.Lock()
	defer s.mu.Unlock()
	_ = s.conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
	_ = s.conn.WriteJSON(m) // a closed socket shows when reading
}

// await waits up to within for a message of type typ, dropping others before it; ok is
// false when the socket closed or the time ran out first.
func (s *sock) await(typ string, within time.Duration) (map[string]any, bool) {
	deadline := time.After(within)
	for {
		s.mu.Lock()
		for len(s.queue) > 0 {
			m := s.queue[0]
			s.queue = s.queue[1:]
			if m["type"] == typ {
				s.mu.Unlock()
				d, _ := m["data"].(map[string]any)
				if d == nil {
					d = map[string]any{}
				}
				return d, true
			}
		}
		s.mu.Unlock()
		select {
		case <-s.signal:
		case <-s.closed:
			// Messages queued before the close are still looked at once.
			s.mu.Lock()
			n := len(s.queue)
			s.mu.Unlock()
			if n == 0 {
				return nil, false
			}
		case <-deadline:
			return nil, false
		}
	}
}

// closeCode answers the close code the server sent (0: none, or not closed yet).
func (s *sock) closeCode() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.code
}

// reason answers the reason of the last force_logout the socket got, if any.
func (s *sock) reason() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lastReason
}

// admitted pings and answers whether the pong came (the socket is in); a refused socket
// is closed by the server instead.
func (s *sock) admitted() bool {
	s.send(map[string]any{"type": "ping"})
	_, ok := s.await("pong", 15*time.Second)
	return ok
}

// awaitClosed waits up to within for the server to close the socket and answers the code.
func (s *sock) awaitClosed(within time.Duration) (int, bool) {
	select {
	case <-s.closed:
		s.mu.Lock()
		defer s.mu.Unlock()
		return s.code, true
	case <-time.After(within):
		return 0, false
	}
}

// isClosed answers whether the socket has ended.
func (s *sock) isClosed() bool {
	select {
	case <-s.closed:
		return true
	default:
		return false
	}
}

// parallel runs fn for 0..n-1 on a few workers and waits; the test machine has 2 cores.
func parallel(n, workers int, fn func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				fn(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// waitUntil polls cond every 100 ms for up to within, and answers whether it held.
func waitUntil(within time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(within)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(100 * time.Millisecond)
	}
}
