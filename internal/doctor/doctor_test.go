package doctor_test

import (
	"context"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/doctor"
	"github.com/keyward/keyward/internal/testenv"
	"github.com/keyward/keyward/internal/testserver"
	"github.com/keyward/keyward/server"
)

// byCheck indexes results by check name (the last of a name wins).
func byCheck(rs []doctor.Result) map[string]doctor.Result {
	m := map[string]doctor.Result{}
	for _, r := range rs {
		m[r.Check] = r
	}
	return m
}

func requireAllOK(t *testing.T, rs []doctor.Result, want ...string) {
	t.Helper()
	for _, r := range rs {
		if r.Status != doctor.OK {
			t.Errorf("%s: %s %s", r.Check, r.Status, r.Detail)
		}
	}
	got := byCheck(rs)
	for _, name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("no %q check in %+v", name, rs)
		}
	}
}

// A node on the embedded default, after it has run once: every check is ok, and the
// storage line names SQLite's version.
func TestEmbeddedDefaultIsHealthy(t *testing.T) {
	node := testserver.Start(t, testserver.Pairs[0])
	node.Stop()
	rs := append([]doctor.Result{doctor.Settings(node.Config, nil)}, doctor.Run(context.Background(), node.Config, doctor.Options{})...)
	requireAllOK(t, rs, "settings", "data dir", "data dir modes", "secrets key", "jwt secret", "stored secrets", "storage")
	if s := byCheck(rs)["storage"].Detail; !strings.HasPrefix(s, "SQLite 3.") || !strings.Contains(s, ", schema version ") || strings.Contains(s, "migrated") {
		t.Errorf("storage line %q does not name SQLite's version and the schema's (unchanged)", s)
	}
	if _, ok := byCheck(rs)["redis"]; ok {
		t.Error("a node without Redis got a Redis check")
	}
}

// A data dir another user can read fails, naming each loosened path and the fix.
func TestLoosenedDataDirModesFail(t *testing.T) {
	node := testserver.Start(t, testserver.Pairs[0])
	node.Stop()
	key := filepath.Join(node.DataDir, "secrets.key")
	if err := os.Chmod(key, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(node.DataDir, 0o755); err != nil {
		t.Fatal(err)
	}
	rs := doctor.DataDirModes(node.DataDir)
	r := byCheck(rs)["data dir modes"]
	if r.Status != doctor.Fail {
		t.Fatalf("loosened modes: %s %s", r.Status, r.Detail)
	}
	for _, want := range []string{key + " is 0644, want 0600", node.DataDir + " is 0755, want 0700", "chmod -R go-rwx " + node.DataDir} {
		if !strings.Contains(r.Detail, want) {
			t.Errorf("detail %q does not say %q", r.Detail, want)
		}
	}
}

// A stored database without its secrets key fails, saying what to restore.
func TestMissingSecretsKeyWithADatabaseFails(t *testing.T) {
	node := testserver.Start(t, testserver.Pairs[0])
	node.Stop()
	if err := os.Remove(filepath.Join(node.DataDir, "secrets.key")); err != nil {
		t.Fatal(err)
	}
	r := byCheck(doctor.Run(context.Background(), node.Config, doctor.Options{}))["secrets key"]
	if r.Status != doctor.Fail || !strings.Contains(r.Detail, "restore secrets.key") {
		t.Fatalf("missing key: %s %s", r.Status, r.Detail)
	}
	if _, err := os.Stat(filepath.Join(node.DataDir, "secrets.key")); err == nil {
		t.Fatal("the doctor wrote a new secrets key")
	}
}

// A Redis that never answers fails within the check's timeout (a listener that accepts
// and stays silent: the worst case, no refused connection to fail fast on).
func TestUnreachableRedisFailsWithinTheBound(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			defer c.Close() // held open, never answered, until the listener closes
		}
	}()
	done := make(chan []doctor.Result, 1)
	go func() {
		done <- doctor.Redis(context.Background(), "redis://"+l.Addr().String()+"/0", doctor.Options{Timeout: time.Second})
	}()
	select {
	case rs := <-done:
		r := byCheck(rs)["redis"]
		if r.Status != doctor.Fail || !strings.Contains(r.Detail, l.Addr().String()) {
			t.Fatalf("silent Redis: %s %s", r.Status, r.Detail)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the Redis check did not end within 30 s with a 1 s timeout")
	}
	// A closed port fails too.
	rs := doctor.Redis(context.Background(), "redis://127.0.0.1:1/0", doctor.Options{Timeout: time.Second})
	if r := byCheck(rs)["redis"]; r.Status != doctor.Fail {
		t.Fatalf("closed port: %s %s", r.Status, r.Detail)
	}
}

// A node on FerretDB (MongoDB wire) and the real Redis: every check is ok, with the
// MongoDB and Redis versions and the clock skew to Redis printed.
func TestMongoAndRedisAreHealthy(t *testing.T) {
	node := testserver.Start(t, testserver.Pairs[1])
	rs := doctor.Run(context.Background(), node.Config, doctor.Options{})
	requireAllOK(t, rs, "data dir", "secrets key", "stored secrets", "storage", "redis", "clock skew")
	got := byCheck(rs)
	if s := got["storage"].Detail; !strings.HasPrefix(s, "MongoDB ") {
		t.Errorf("storage line %q does not name MongoDB's version", s)
	}
	if s := got["redis"].Detail; !strings.Contains(s, "Redis ") || strings.Contains(s, "unknown version") {
		t.Errorf("redis line %q does not name Redis's version", s)
	}
	if s := got["clock skew"].Detail; !strings.Contains(s, "Redis's clock is ") {
		t.Errorf("clock skew line %q does not give the skew", s)
	}
	var out strings.Builder
	if doctor.Print(&out, rs) {
		t.Error("Print reported a failure")
	}
	t.Logf("doctor:\n%s", out.String())
}

// A mail outbox outside the data dir is checked too (it holds mailed links).
func TestLoosenedOutboxOutsideTheDataDirFails(t *testing.T) {
	env := testserver.Env(t, testserver.Pairs[0])
	outbox := filepath.Join(t.TempDir(), "outbox")
	env["KEYWARD_MAIL_OUTBOX"] = outbox
	node := testserver.StartEnv(t, env)
	node.Stop()
	requireAllOK(t, doctor.Run(context.Background(), node.Config, doctor.Options{}), "mail outbox")
	if err := os.Chmod(outbox, 0o755); err != nil {
		t.Fatal(err)
	}
	r := byCheck(doctor.Run(context.Background(), node.Config, doctor.Options{}))["mail outbox"]
	if r.Status != doctor.Fail || !strings.Contains(r.Detail, outbox+" is 0755, want 0700") {
		t.Fatalf("loosened outbox: %s %s", r.Status, r.Detail)
	}
}

// The Sentinel and Redis Cluster forms of the URL are checked through their master and
// seeds (make test starts both).
func TestRedisSentinelAndClusterAreHealthy(t *testing.T) {
	t.Run("sentinel", func(t *testing.T) {
		requireAllOK(t, doctor.Redis(context.Background(), testenv.SentinelURL(t), doctor.Options{}), "redis", "clock skew")
	})
	t.Run("cluster", func(t *testing.T) {
		requireAllOK(t, doctor.Redis(context.Background(), testenv.RedisClusterURL(t), doctor.Options{}), "redis", "clock skew")
	})
}

// An unreachable MongoDB fails within the check's timeout, naming its address.
func TestUnreachableMongoFailsWithinTheBound(t *testing.T) {
	env := testserver.Env(t, testserver.Pairs[0])
	env["KEYWARD_MONGO_URI"] = "mongodb://127.0.0.1:1/"
	env["KEYWARD_SECRETS_KEY"] = strings.Repeat("k", 40)
	cfg := loadConfig(t, env)
	done := make(chan []doctor.Result, 1)
	go func() { done <- doctor.Run(context.Background(), cfg, doctor.Options{Timeout: time.Second}) }()
	select {
	case rs := <-done:
		r := byCheck(rs)["storage"]
		if r.Status != doctor.Fail || !strings.Contains(r.Detail, "127.0.0.1:1") {
			t.Fatalf("unreachable MongoDB: %s %s", r.Status, r.Detail)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the storage check did not end within 30 s with a 1 s timeout")
	}
}

func loadConfig(t *testing.T, env map[string]string) server.Config {
	t.Helper()
	cfg, err := server.LoadConfig("test", nil, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
