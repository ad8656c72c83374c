// Package testserver starts real Keyward nodes for behaviour tests: a real listener on a
// loopback port, a real SQLite file or MongoDB-wire database, the memory engine or a real
// Redis, and the mail outbox in a temp dir. Every returned server is stopped by t.Cleanup.
//
// Each runs the subtest once per engine pair, so every behaviour is checked against SQLite
// with the memory engine and against the MongoDB-wire server with Redis: between them, all
// four engines.
package testserver

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/keyward/keyward/internal/testenv"
	"github.com/keyward/keyward/server"
	storagemongo "github.com/keyward/keyward/storage/mongo"
	storagesqlite "github.com/keyward/keyward/storage/sqlite"
)

// Engines names a storage and cluster engine pair.
type Engines struct {
	Name  string
	Mongo bool
	Redis bool
}

// Pairs are the engine pairs behaviour tests run on.
var Pairs = []Engines{{Name: "sqlite+memory"}, {Name: "mongo+redis", Mongo: true, Redis: true}}

// Server is a running node under test.
type Server struct {
	URL     string
	Outbox  string
	DataDir string
	Config  server.Config
	Node    *server.Server
	clock   *Clock
	stop    func() // stops the node and waits; idempotent
}

// Stop shuts the node down gracefully before the test ends (a restart test starts another
// node on the same data afterwards).
func (s *Server) Stop() { s.stop() }

// Clock is the test-controlled time of a node's services: real time plus an offset.
type Clock struct {
	mu     sync.Mutex
	offset time.Duration
}

// Now returns the shifted time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.offset += d
	c.mu.Unlock()
}

// Each runs fn as a subtest on every engine pair.
func Each(t *testing.T, fn func(t *testing.T, e Engines)) {
	for _, e := range Pairs {
		t.Run(e.Name, func(t *testing.T) { fn(t, e) })
	}
}

// Env builds the environment (KEYWARD_* variables) of a node on the engine pair, with its
// data in a temp dir. Tests may change it before Start.
func Env(t *testing.T, e Engines) map[string]string {
	t.Helper()
	dir := t.TempDir()
	env := map[string]string{
		"KEYWARD_ADDR":     "127.0.0.1:0",
		"KEYWARD_DATA_DIR": dir,
		// Tests pick their client address through X-Forwarded-For from loopback.
		"KEYWARD_TRUSTED_PROXIES": "127.0.0.1/32",
		// Cheap hashes keep the suite fast under -race; production uses OWASP's minimum.
		"KEYWARD_ARGON2_MEMORY_KIB": "1024",
		"KEYWARD_ARGON2_ITERATIONS": "1",
		"KEYWARD_LOG_LEVEL":         "warn",
		// Above net/http's 5 s grace for a connection accepted but never used (a client
		// transport may dial one more connection than it ends up using), which Shutdown
		// waits out before treating it as idle.
		"KEYWARD_SHUTDOWN_TIMEOUT": "10s",
	}
	if e.Mongo {
		env["KEYWARD_MONGO_URI"] = testenv.MongoURI(t)
		env["KEYWARD_MONGO_DATABASE"] = testenv.UniqueName("kwtest_")
	}
	if e.Redis {
		env["KEYWARD_REDIS_URL"] = slowRedisURL(t, testenv.RedisURL(t))
		env["KEYWARD_REDIS_PREFIX"] = testenv.UniqueName("kwtest:") + ":"
		env["KEYWARD_REDIS_COMMAND_TIMEOUT"] = "2s" // see slowRedisURL
		env["KEYWARD_JWT_SECRET"] = "test-secret-" + strings.Repeat("x", 40)
		env["KEYWARD_SECRETS_KEY"] = "test-secrets-key-" + strings.Repeat("k", 40)
	}
	return env
}

// slowRedisURL is the test Redis URL with read and write timeouts of 2 s unless it sets
// them. A loaded 2-core test machine (the suite under -race, CI beside other jobs) can hold
// a Redis answer past the production bounds (300 ms a read, 400 ms a command); the node
// would then answer 503 for a Redis that is only slow (seen in bursts of 50 logins at load
// 15). The frozen-Redis tests (cmd/keyward) start their nodes with the production defaults.
func slowRedisURL(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatalf("test Redis URL %q: %v", raw, err)
	}
	q := u.Query()
	for _, k := range []string{"read_timeout", "write_timeout"} {
		if !q.Has(k) {
			q.Set(k, "2s")
		}
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// Start runs a node on the engine pair.
func Start(t *testing.T, e Engines) *Server {
	t.Helper()
	return StartEnv(t, Env(t, e))
}

// StartEnv runs a node with the given environment.
func StartEnv(t *testing.T, env map[string]string) *Server {
	t.Helper()
	cfg, err := server.LoadConfig("test", nil, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatalf("config: %v", err)
	}
	if cfg.MongoURI == "" {
		SeedSQLite(t, cfg.DataDir)
	} else if os.Getenv(testenv.EnvMongoURI) != "" && cfg.MongoURI == testenv.MongoURI(t) {
		cfg.MongoClient = sharedMongoClient(t, cfg.MongoURI)
	}
	clock := &Clock{}
	cfg.Clock = clock.Now
	log := slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: cfg.LogLevel}))
	ctx, cancel := context.WithCancel(context.Background())
	node, err := server.New(ctx, cfg, log)
	if err != nil {
		cancel()
		t.Fatalf("start server: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- node.Run(ctx) }()
	stop := sync.OnceFunc(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("server stopped with error: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Errorf("server did not stop within 15 s")
		}
	})
	t.Cleanup(stop)
	return &Server{URL: "http://" + node.Addr(), Outbox: cfg.MailOutbox, DataDir: cfg.DataDir, Config: cfg, Node: node, clock: clock, stop: stop}
}

// mongoClients are the clients to the shared test MongoDB-wire server that the nodes of
// this test process share, by URI, connected by the first node and left connected for the
// rest of the process: a node connecting on its own warms 64 connections (testenv.MongoURI),
// about 0.2 CPU s of the test process and FerretDB each, and the http tests start more
// than a hundred such nodes. A node started on another server (a test's own FerretDB)
// connects on its own.
var mongoClients sync.Map // uri → func() (*mongo.Client, error)

func sharedMongoClient(t *testing.T, uri string) *mongo.Client {
	t.Helper()
	v, _ := mongoClients.LoadOrStore(uri, sync.OnceValues(func() (*mongo.Client, error) {
		return storagemongo.Connect(context.Background(), uri)
	}))
	client, err := v.(func() (*mongo.Client, error))()
	if err != nil {
		t.Fatalf("connect to %s: %v", uri, err)
	}
	return client
}

// SeedSQLite puts a database with every migration applied into the data dir, as
// keyward.db, unless the dir is missing or already has one (a restarted node keeps its
// data). The migrated database is built once per test process and copied
// (testenv.FileTemplate): migrating a new file costs a node's start more CPU under -race
// than the copy, and the http tests start hundreds of nodes. The migrations themselves are
// tested from an empty file in storage/sqlite.
func SeedSQLite(t *testing.T, dataDir string) {
	t.Helper()
	if fi, err := os.Stat(dataDir); err != nil || !fi.IsDir() {
		return
	}
	path := filepath.Join(dataDir, "keyward.db")
	if _, err := os.Lstat(path); err == nil {
		return
	}
	testenv.FileTemplate(t, "sqlite-migrated", path, func(p string) error {
		st, err := storagesqlite.Open(context.Background(), storagesqlite.Config{Path: p})
		if err != nil {
			return err
		}
		return st.Close()
	})
}

// Clock is the node's service clock.
func (s *Server) Clock() *Clock { return s.clock }

// testWriter sends server logs to the test log, so they show only for failing tests.
type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// Response is a decoded reply.
type Response struct {
	Status int
	Header http.Header
	Raw    []byte
	Body   map[string]any
}

// Data returns the data member as an object.
func (r Response) Data() map[string]any {
	d, _ := r.Body["data"].(map[string]any)
	return d
}

// Code returns error.code, or "".
func (r Response) Code() string {
	e, _ := r.Body["error"].(map[string]any)
	c, _ := e["code"].(string)
	return c
}

// Req describes a request.
type Req struct {
	Method string
	Path   string
	// Body is marshalled to JSON unless it is a string or []byte, sent as is.
	Body        any
	Token       string // Authorization: Bearer
	APIKey      string // X-API-Key
	IP          string // X-Forwarded-For
	ContentType string // default application/json when a body is given
	Header      map[string]string
}

// Do sends the request and decodes the JSON reply; a reply that is not JSON fails the test.
func (s *Server) Do(t *testing.T, r Req) Response {
	t.Helper()
	var body io.Reader
	switch b := r.Body.(type) {
	case nil:
	case string:
		body = strings.NewReader(b)
	case []byte:
		body = bytes.NewReader(b)
	default:
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatalf("marshal body: %v", err)
		}
		body = bytes.NewReader(raw)
	}
	req, err := http.NewRequest(r.Method, s.URL+r.Path, body)
	if err != nil {
		t.Fatalf("new request: %v", err)
	}
	if body != nil {
		ct := r.ContentType
		if ct == "" {
			ct = "application/json"
		}
		req.Header.Set("Content-Type", ct)
	}
	if r.Token != "" {
		req.Header.Set("Authorization", "Bearer "+r.Token)
	}
	if r.APIKey != "" {
		req.Header.Set("X-API-Key", r.APIKey)
	}
	if r.IP != "" {
		req.Header.Set("X-Forwarded-For", r.IP)
	}
	for k, v := range r.Header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", r.Method, r.Path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read body: %v", r.Method, r.Path, err)
	}
	out := Response{Status: resp.StatusCode, Header: resp.Header, Raw: raw}
	if err := json.Unmarshal(raw, &out.Body); err != nil {
		t.Fatalf("%s %s: reply is not a JSON object (status %d): %q", r.Method, r.Path, resp.StatusCode, raw)
	}
	return out
}

// Mails returns the outbox's mails (raw RFC 5322 text) in the order they were written.
func (s *Server) Mails(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(s.Outbox)
	if err != nil && !os.IsNotExist(err) {
		t.Fatalf("read outbox: %v", err)
	}
	var names []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".eml") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	out := make([]string, 0, len(names))
	for _, n := range names {
		b, err := os.ReadFile(filepath.Join(s.Outbox, n))
		if err != nil {
			t.Fatalf("read mail: %v", err)
		}
		out = append(out, string(b))
	}
	return out
}

// WaitMail waits (bounded) until a mail to the address whose text contains want is in the
// outbox, and returns it. Mail is sent off the request path, so it may lag the reply.
func (s *Server) WaitMail(t *testing.T, to, want string) string {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		for _, m := range s.Mails(t) {
			if strings.Contains(m, "To: <"+to+">") && strings.Contains(m, want) {
				return m
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no mail to %s containing %q; outbox has %d mails", to, want, len(s.Mails(t)))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// CountMails counts the outbox's mails to the address.
func (s *Server) CountMails(t *testing.T, to string) int {
	n := 0
	for _, m := range s.Mails(t) {
		if strings.Contains(m, "To: <"+to+">") {
			n++
		}
	}
	return n
}
