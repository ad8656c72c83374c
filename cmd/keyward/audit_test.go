package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/keyward/keyward/internal/testenv"
	_ "github.com/keyward/keyward/storage/sqlite" // the "sqlite" driver of the raw edit
)

// jsonCall sends a JSON request with the bearer token and answers the status and the data.
func jsonCall(t *testing.T, method, url, token string, body any) (int, map[string]any) {
	t.Helper()
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(t.Context(), method, url, bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		Data map[string]any `json:"data"`
	}
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out.Data
}

// TestAuditVerifyNamesTheEditedEntry (issue 21): every acknowledged change of a server
// SIGKILLed right after its last answer has its entry, and the chain the server wrote
// verifies with `keyward audit verify`; after one stored entry is edited in the database,
// the command exits 1 and names that entry. Both stores.
func TestAuditVerifyNamesTheEditedEntry(t *testing.T) {
	dbName := testenv.UniqueName("kwtest_cli_audit_")
	mongoURI := testenv.MongoURI(t)
	for _, c := range []struct {
		name string
		env  func(dir string) []string
		// edit changes the after member of the account's entry of seq 2, behind the
		// server's back, and answers that entry's id.
		edit func(t *testing.T, dir string) string
	}{
		{"sqlite", func(dir string) []string { return []string{"KEYWARD_DATA_DIR=" + dir} },
			func(t *testing.T, dir string) string {
				db, err := sql.Open("sqlite", filepath.Join(dir, "keyward.db"))
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				var id string
				if err := db.QueryRowContext(t.Context(), `SELECT id FROM audit_log WHERE seq = 2`).Scan(&id); err != nil {
					t.Fatal(err)
				}
				res, err := db.ExecContext(t.Context(), `UPDATE audit_log SET after = '{"name":"Tampered"}' WHERE id = ?`, id)
				if n, _ := res.RowsAffected(); err != nil || n != 1 {
					t.Fatalf("edit: %d rows, %v", n, err)
				}
				return id
			}},
		{"ferretdb", func(dir string) []string {
			return []string{"KEYWARD_DATA_DIR=" + dir, "KEYWARD_MONGO_URI=" + mongoURI, "KEYWARD_MONGO_DATABASE=" + dbName}
		}, func(t *testing.T, _ string) string {
			client, err := mongo.Connect(options.Client().ApplyURI(mongoURI))
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = client.Disconnect(context.Background()) }()
			db := client.Database(dbName)
			t.Cleanup(func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				_ = db.Drop(ctx)
			})
			var doc struct {
				EntryID string `bson:"entryId"`
			}
			if err := db.Collection("auditLog").FindOne(t.Context(), bson.D{{Key: "seq", Value: 2}}).Decode(&doc); err != nil {
				t.Fatal(err)
			}
			res, err := db.Collection("auditLog").UpdateOne(t.Context(), bson.D{{Key: "entryId", Value: doc.EntryID}},
				bson.D{{Key: "$set", Value: bson.D{{Key: "after", Value: `{"name":"Tampered"}`}}}})
			if err != nil || res.ModifiedCount != 1 {
				t.Fatalf("edit: %+v, %v", res, err)
			}
			return doc.EntryID
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			env := c.env(dir)
			n := startNode(t, env)
			admin := exec.Command(binary, "admin", "create", "--username", "auditor", "--email", "auditor@example.com", "--password", "Audit-Pass-1")
			admin.Env = append(append(os.Environ(), env...), "KEYWARD_ARGON2_MEMORY_KIB=1024", "KEYWARD_ARGON2_ITERATIONS=1")
			if out, err := admin.CombinedOutput(); err != nil {
				t.Fatalf("admin create: %v\n%s", err, out)
			}
			_, body := post(t, n.url+"/api/auth/login", map[string]string{"username": "auditor", "password": "Audit-Pass-1"})
			token, _ := body["data"].(map[string]any)["token"].(string)
			status, app := jsonCall(t, "POST", n.url+"/api/apps", token, map[string]any{"name": "Chained"})
			if status != http.StatusCreated {
				t.Fatalf("create app: %d %v", status, app)
			}
			appID := app["id"].(string)
			// Acknowledged updates from several clients at once (their entries share group
			// commits), then SIGKILL right after the last answer: every acknowledged change
			// has its entry.
			// FerretDB, slow on the shared test machine, takes 100 of them
			// (KEYWARD_TEST_AUDIT_FERRET_UPDATES sets more); SQLite 300.
			updates, clients := 300, 6
			if c.name == "ferretdb" {
				updates = 100
				if v, err := strconv.Atoi(os.Getenv("KEYWARD_TEST_AUDIT_FERRET_UPDATES")); err == nil && v > 0 {
					updates = v
				}
			}
			var wg sync.WaitGroup
			failed := make(chan int, updates)
			for w := range clients {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := w; i < updates; i += clients {
						if status, _ := jsonCall(t, "PATCH", n.url+"/api/apps/"+appID, token, map[string]any{"name": fmt.Sprintf("Chained %d", i)}); status != http.StatusOK {
							failed <- status
						}
					}
				}()
			}
			wg.Wait()
			if err := n.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			n.done <- <-n.done // keep the exit for the cleanup's wait
			close(failed)
			for status := range failed {
				t.Fatalf("an update was answered %d", status)
			}

			verify := func() (int, string) {
				cmd := exec.Command(binary, "audit", "verify")
				cmd.Env = append(os.Environ(), env...)
				out, err := cmd.CombinedOutput()
				code := 0
				if ee, isExit := err.(*exec.ExitError); isExit {
					code = ee.ExitCode()
				} else if err != nil {
					t.Fatal(err)
				}
				return code, string(out)
			}
			if code, out := verify(); code != 0 || !strings.Contains(out, fmt.Sprintf("1 accounts, %d entries checked, 0 broken", updates+1)) {
				t.Fatalf("after SIGKILL: exit %d\n%s", code, out)
			}
			// The list of a node started on what the killed one left.
			n = startNode(t, env)
			if _, page := jsonCall(t, "GET", n.url+"/api/audit?limit=1", token, nil); page["total"] != float64(updates+1) {
				t.Fatalf("audit list after SIGKILL: %v", page)
			}
			n.stop(t)

			middle := c.edit(t, dir) // the first update
			code, out := verify()
			if code != 1 || !strings.Contains(out, "BROKEN") || !strings.Contains(out, "entry "+middle+" (seq 2)") {
				t.Fatalf("edited entry %s: exit %d\n%s", middle, code, out)
			}
		})
	}
}
