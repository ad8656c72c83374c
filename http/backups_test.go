package httpapi_test

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keyward/keyward/core/accounts"
	"github.com/keyward/keyward/internal/backup"
	ts "github.com/keyward/keyward/internal/testserver"
)

// TestAdminBackups: an administrator takes a backup now, lists it with the last result,
// downloads it (a whole backup: every entry matches the manifest); others are refused.
func TestAdminBackups(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		if _, err := s.Node.Accounts().CreateAccount(t.Context(), accounts.CreateInput{Username: "root", Email: "root@example.com",
			Password: goodPassword, Role: "admin"}); err != nil {
			t.Fatal(err)
		}
		admin := login(t, s, "root", goodPassword, "").Data()["token"].(string)

		expect(t, s.Do(t, ts.Req{Method: "GET", Path: "/api/admin/backups", Token: o.Token}), http.StatusForbidden, "FORBIDDEN")
		expect(t, s.Do(t, ts.Req{Method: "POST", Path: "/api/admin/backups", Token: o.Token}), http.StatusForbidden, "FORBIDDEN")

		r := s.Do(t, ts.Req{Method: "GET", Path: "/api/admin/backups", Token: admin})
		expectOK(t, r, http.StatusOK)
		if r.Data()["last"] != nil || len(r.Data()["backups"].([]any)) != 0 {
			t.Fatalf("before any backup: %s", r.Raw)
		}

		r = s.Do(t, ts.Req{Method: "POST", Path: "/api/admin/backups", Token: admin})
		expectOK(t, r, http.StatusCreated)
		name, _ := r.Data()["name"].(string)
		if !backup.ValidName(name) || r.Data()["size"].(float64) <= 0 || r.Data()["manual"] != true {
			t.Fatalf("take now: %s", r.Raw)
		}

		r = s.Do(t, ts.Req{Method: "GET", Path: "/api/admin/backups", Token: admin})
		expectOK(t, r, http.StatusOK)
		list := r.Data()["backups"].([]any)
		last, _ := r.Data()["last"].(map[string]any)
		if len(list) != 1 || list[0].(map[string]any)["name"] != name || last["name"] != name {
			t.Fatalf("list after a backup: %s", r.Raw)
		}

		req, _ := http.NewRequest("GET", s.URL+"/api/admin/backups/"+name, nil)
		req.Header.Set("Authorization", "Bearer "+admin)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/gzip" ||
			!strings.Contains(resp.Header.Get("Content-Disposition"), name) {
			t.Fatalf("download: %d %v %v", resp.StatusCode, resp.Header, err)
		}
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, body, 0o600); err != nil {
			t.Fatal(err)
		}
		m, err := backup.Verify(path, nil)
		if err != nil {
			t.Fatalf("downloaded backup: %v", err)
		}
		if m.Counts["accounts"] != 2 {
			t.Errorf("backup counts %v, want 2 accounts", m.Counts)
		}
		expect(t, s.Do(t, ts.Req{Method: "GET", Path: "/api/admin/backups/keyward-backup-nope.tar.gz", Token: admin}), http.StatusNotFound, "NOT_FOUND")
		expect(t, s.Do(t, ts.Req{Method: "GET", Path: "/api/admin/backups/" + name, Token: o.Token}), http.StatusForbidden, "FORBIDDEN")
	})
}
