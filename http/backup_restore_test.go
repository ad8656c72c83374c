package httpapi_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/keyward/keyward/core/accounts"
	"github.com/keyward/keyward/core/secrets"
	"github.com/keyward/keyward/internal/backup"
	"github.com/keyward/keyward/internal/testenv"
	ts "github.com/keyward/keyward/internal/testserver"
	"github.com/keyward/keyward/storage"
)

// TestBackupRestoreSDKFlow: a node with an app, a registered user with a live session and
// a license is backed up from the Admin route while licenses keep being written; the
// backup is restored into an empty data dir (or MongoDB database) and a new node started
// on it: the SDK flow (init, login with the password, license login) works there, and
// every license the backup counted is there.
func TestBackupRestoreSDKFlow(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		env := ts.Env(t, e)
		s := ts.StartEnv(t, env)
		a := api{t, s, newOwner(t, s).Token}
		appID, secret := a.createApp("Restored")
		key := createLicense(a, appID, map[string]any{"level": 2, "maxUses": 5})
		c := newSDK(t, s, secret)
		c.mustInit()
		expectOK(t, c.withNonce("register", map[string]any{"username": "alice", "password": "pw-alice-1", "email": "", "displayName": "",
			"licenseKey": "", "hwid": "host-a", "pcName": ""}), http.StatusOK)
		if _, err := s.Node.Accounts().CreateAccount(t.Context(), accounts.CreateInput{Username: "root", Email: "root@example.com",
			Password: goodPassword, Role: "admin"}); err != nil {
			t.Fatal(err)
		}
		admin := login(t, s, "root", goodPassword, "").Data()["token"].(string)

		// Licenses keep being written while the backup is taken.
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ctx.Err() == nil && i < 2000; i++ {
				l := storage.License{ID: fmt.Sprintf("during-%d", i), AppID: appID, Key: fmt.Sprintf("DURING-%05d", i), Enabled: true, Level: 1, MaxUses: 1, CreatedAt: storage.Now()}
				if s.Node.Core().Store.CreateLicenses(ctx, []storage.License{l}) != nil {
					return
				}
			}
		}()
		r := s.Do(t, ts.Req{Method: "POST", Path: "/api/admin/backups", Token: admin})
		stop()
		wg.Wait()
		expectOK(t, r, http.StatusCreated)
		name := r.Data()["name"].(string)
		req, _ := http.NewRequest("GET", s.URL+"/api/admin/backups/"+name, nil)
		req.Header.Set("Authorization", "Bearer "+admin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, body, 0o600); err != nil {
			t.Fatal(err)
		}
		s.Stop()

		// Restore elsewhere with the node's key, and start a node there.
		key2 := env["KEYWARD_SECRETS_KEY"]
		if key2 == "" {
			b, err := os.ReadFile(filepath.Join(env["KEYWARD_DATA_DIR"], "secrets.key"))
			if err != nil {
				t.Fatal(err)
			}
			key2 = strings.TrimSpace(string(b))
		}
		box, err := secrets.NewBox([]byte(key2))
		if err != nil {
			t.Fatal(err)
		}
		env2 := map[string]string{}
		for k, v := range env {
			env2[k] = v
		}
		env2["KEYWARD_DATA_DIR"] = t.TempDir()
		env2["KEYWARD_SECRETS_KEY"] = key2
		target := backup.Target{DataDir: env2["KEYWARD_DATA_DIR"], Sealer: box}
		if e.Mongo {
			env2["KEYWARD_MONGO_DATABASE"] = testenv.UniqueName("kwrestored_")
			target.MongoURI, target.MongoDatabase = env2["KEYWARD_MONGO_URI"], env2["KEYWARD_MONGO_DATABASE"]
		}
		m, _, err := backup.Restore(t.Context(), path, target)
		if err != nil {
			t.Fatal(err)
		}
		s2 := ts.StartEnv(t, env2)

		c2 := newSDK(t, s2, secret)
		c2.mustInit()
		r = c2.withNonce("login", map[string]any{"username": "alice", "password": "pw-alice-1", "licenseKey": "", "hwid": "host-a", "pcName": ""})
		expectOK(t, r, http.StatusOK)
		c3 := newSDK(t, s2, secret)
		c3.mustInit()
		r = c3.withNonce("license", map[string]any{"licenseKey": key, "hwid": "h", "pcName": ""})
		expectOK(t, r, http.StatusOK)
		if r.Data()["level"] != float64(2) {
			t.Fatalf("license login on the restored node: %s", r.Raw)
		}
		n, err := s2.Node.Core().Store.CountAppRecords(t.Context(), appID)
		if err != nil {
			t.Fatal(err)
		}
		if n.Licenses != m.Counts[storage.KindLicenses] || n.Licenses < 2 {
			t.Errorf("restored node has %d licenses, the backup counted %d", n.Licenses, m.Counts[storage.KindLicenses])
		}
	})
}
