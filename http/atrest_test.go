package httpapi_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	ts "github.com/keyward/keyward/internal/testserver"
	"github.com/keyward/keyward/server"
)

// TestDataDirIsPrivate starts the embedded node on a data dir left readable by everyone
// (as an older version made it), uses it (a mail in the outbox, a file upload), and checks
// that every folder in it is 0700 and every file 0600: the database and its WAL, the JWT
// secret, the blobs, the mails, and what was there before.
func TestDataDirIsPrivate(t *testing.T) {
	env := ts.Env(t, ts.Pairs[0])
	dir := env["KEYWARD_DATA_DIR"]
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "files", "old"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "files", "old", "blob@"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "files", "old", "blob@"), 0o644); err != nil { // past the umask
		t.Fatal(err)
	}
	s := ts.StartEnv(t, env)
	a := api{t, s, newOwner(t, s).Token}
	id, _ := a.createApp("Private")
	body, ct := multipartBody(t, "x.bin", []byte("private bytes"), nil, nil)
	expectOK(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/apps/" + id + "/files", Token: a.token, Body: body, ContentType: ct}), http.StatusCreated)

	seen := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		want := fs.FileMode(0o600)
		if d.IsDir() {
			want = 0o700
		}
		if info.Mode().Perm() != want {
			t.Errorf("%s has mode %o, want %o", rel, info.Mode().Perm(), want)
		}
		seen[filepath.Base(filepath.Dir(rel))+"/"+filepath.Ext(rel)] = true
		seen[rel] = true
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"keyward.db", "keyward.db-wal", "keyward.db-shm", "jwt.secret", "outbox/.eml", "files/old/blob@"} {
		if !seen[want] {
			t.Errorf("%s was not in the data dir: the test checked less than it should", want)
		}
	}
}

// rawStore answers every byte the node's store holds, read around the engine: the SQLite
// file and its WAL, or every document of the MongoDB database as BSON.
func rawStore(t *testing.T, s *ts.Server, mongoMode bool) []byte {
	t.Helper()
	if !mongoMode {
		var raw []byte
		for _, name := range []string{"keyward.db", "keyward.db-wal"} {
			b, err := os.ReadFile(filepath.Join(s.DataDir, name))
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				t.Fatal(err)
			}
			raw = append(raw, b...)
		}
		return raw
	}
	client, err := mongo.Connect(options.Client().ApplyURI(s.Config.MongoURI))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = client.Disconnect(context.Background()) }()
	db := client.Database(s.Config.MongoDatabase)
	names, err := db.ListCollectionNames(t.Context(), bson.D{})
	if err != nil {
		t.Fatal(err)
	}
	var raw []byte
	for _, n := range names {
		cur, err := db.Collection(n).Find(t.Context(), bson.D{})
		if err != nil {
			t.Fatal(err)
		}
		for cur.Next(t.Context()) {
			raw = append(raw, cur.Current...)
		}
		_ = cur.Close(t.Context())
	}
	return raw
}

// TestSecretsAreEncryptedAtRest turns 2FA on and creates a signed integration over HTTP,
// then reads the store's raw bytes: neither secret is there. A restart on the same data
// still signs the owner in with a TOTP code; a restart with another secrets key refuses to
// start, saying why.
func TestSecretsAreEncryptedAtRest(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		env := ts.Env(t, e)
		env["KEYWARD_WEBHOOKS_ALLOW_PRIVATE"] = "true"
		s := ts.StartEnv(t, env)
		o := newOwner(t, s)
		post := func(s *ts.Server, path, token string, body any) ts.Response {
			return s.Do(t, ts.Req{Method: "POST", Path: path, Token: token, Body: body, IP: nextIP()})
		}
		setup := post(s, "/api/auth/2fa/setup", o.Token, nil)
		expectOK(t, setup, http.StatusOK)
		totpSecret := setup.Data()["secret"].(string)
		expectOK(t, post(s, "/api/auth/2fa/enable", o.Token, map[string]string{"code": code(t, s, totpSecret)}), http.StatusOK)
		a := api{t, s, o.Token}
		appID, _ := a.createApp("AtRest")
		r := a.do("POST", "/api/apps/"+appID+"/integrations", map[string]any{"name": "Ops", "type": "CUSTOM",
			"webhookUrl": "https://127.0.0.1:9/hooks/keyward", "events": []string{"rule.create"}})
		expectOK(t, r, http.StatusCreated)
		hookSecret := r.Data()["secret"].(string)
		s.Stop()

		raw := rawStore(t, s, e.Mongo)
		if !bytes.Contains(raw, []byte(o.Email)) {
			t.Fatal("the raw bytes do not hold the account: the test reads the wrong place")
		}
		for name, secret := range map[string]string{"TOTP secret": totpSecret, "integration secret": hookSecret} {
			if bytes.Contains(raw, []byte(secret)) {
				t.Errorf("the %s is stored in clear", name)
			}
		}

		// Same data, same key: the TOTP secret reads back.
		s2 := ts.StartEnv(t, env)
		s2.Clock().Advance(30 * time.Second) // a code of a step not used yet
		expectOK(t, login(t, s2, o.Username, o.Password, code(t, s2, totpSecret)), http.StatusOK)
		s2.Stop()

		// Another key: refused at start, with the reason.
		wrong := maps.Clone(env)
		if e.Redis {
			wrong["KEYWARD_SECRETS_KEY"] = strings.Repeat("w", 40)
		} else if err := os.WriteFile(filepath.Join(env["KEYWARD_DATA_DIR"], "secrets.key"), []byte(strings.Repeat("w", 40)), 0o600); err != nil {
			t.Fatal(err)
		}
		cfg, err := server.LoadConfig("test", nil, func(k string) string { return wrong[k] }, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		node, err := server.New(t.Context(), cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
		if err == nil {
			_ = node.Shutdown(context.Background())
			t.Fatal("a node with another secrets key started")
		}
		if !strings.Contains(err.Error(), "secrets key") {
			t.Fatalf("start error does not name the secrets key: %v", err)
		}
	})
}
