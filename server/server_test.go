package server_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keyward/keyward/server"
)

func load(t *testing.T, vars map[string]string) server.Config {
	t.Helper()
	c, err := server.LoadConfig("t", nil, func(k string) string { return vars[k] }, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

func TestEmbeddedDefaultKeepsItsSecretAndData(t *testing.T) {
	dir := t.TempDir()
	vars := map[string]string{"KEYWARD_ADDR": "127.0.0.1:0", "KEYWARD_DATA_DIR": dir, "KEYWARD_ARGON2_MEMORY_KIB": "1024", "KEYWARD_ARGON2_ITERATIONS": "1"}
	var logs bytes.Buffer
	s, err := server.New(context.Background(), load(t, vars), slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"storage=sqlite:", "cluster=memory", "mail=outbox:", "listen=127.0.0.1:"} {
		if !strings.Contains(logs.String(), want) {
			t.Fatalf("start-up line lacks %s: %s", want, logs.String())
		}
	}
	secret, err := os.ReadFile(filepath.Join(dir, "jwt.secret"))
	if err != nil || len(strings.TrimSpace(string(secret))) < 32 {
		t.Fatalf("secret: %q %v", secret, err)
	}
	for _, p := range []string{"keyward.db", "outbox", "secrets.key"} {
		if _, err := os.Stat(filepath.Join(dir, p)); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
	}
	// A second start keeps the same secret, so tokens survive restarts.
	s, err = server.New(context.Background(), load(t, vars), quiet())
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Shutdown(context.Background())
	again, _ := os.ReadFile(filepath.Join(dir, "jwt.secret"))
	if string(again) != string(secret) {
		t.Fatal("secret changed across restarts")
	}
}

func TestRefusesToStart(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	file := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	free := func() string {
		l, _ := net.Listen("tcp", "127.0.0.1:0")
		defer l.Close()
		return l.Addr().String()
	}
	cases := map[string]struct {
		vars map[string]string
		want string
	}{
		"port in use":        {map[string]string{"KEYWARD_ADDR": busy.Addr().String()}, "cannot listen"},
		"unwritable datadir": {map[string]string{"KEYWARD_DATA_DIR": filepath.Join(file, "data")}, "data dir"},
		"unreachable redis": {map[string]string{"KEYWARD_REDIS_URL": "redis://" + free() + "/0",
			"KEYWARD_JWT_SECRET": strings.Repeat("s", 40), "KEYWARD_SECRETS_KEY": strings.Repeat("k", 40)}, "Redis"},
		"unreachable mongo": {map[string]string{"KEYWARD_MONGO_URI": "mongodb://" + free() + "/?serverSelectionTimeoutMS=1000&connectTimeoutMS=1000"}, "MongoDB"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if c.vars["KEYWARD_DATA_DIR"] == "" {
				c.vars["KEYWARD_DATA_DIR"] = t.TempDir()
			}
			if c.vars["KEYWARD_ADDR"] == "" {
				c.vars["KEYWARD_ADDR"] = "127.0.0.1:0"
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := server.New(ctx, load(t, c.vars), quiet())
			if err == nil {
				_ = s.Shutdown(context.Background())
				t.Fatal("started")
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not say %q", err, c.want)
			}
		})
	}
}
