package audit_test

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/internal/testenv"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/mongo"
	"github.com/keyward/keyward/storage/sqlite"
	"github.com/keyward/keyward/storage/storagetest"
)

// engine is a store with a way to edit one stored entry behind the store's back, as
// someone with access to the database would.
type engine struct {
	name  string
	store storage.Store
	// edit sets the after member of the entry with the id in the database itself.
	edit func(t *testing.T, id, after string)
	// remove deletes the entry with the id in the database itself.
	remove func(t *testing.T, id string)
}

func engines(t *testing.T) []engine {
	path := filepath.Join(t.TempDir(), "k.db")
	lite, err := sqlite.Open(t.Context(), sqlite.Config{Path: path})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lite.Close() })
	raw, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = raw.Close() })
	sqlExec := func(t *testing.T, q string, args ...any) {
		t.Helper()
		res, err := raw.ExecContext(t.Context(), q, args...)
		if n, _ := res.RowsAffected(); err != nil || n != 1 {
			t.Fatalf("%s: %d rows, %v", q, n, err)
		}
	}

	name := testenv.UniqueName("kwtest_audit_")
	mg, err := mongo.Open(t.Context(), mongo.Config{URI: testenv.MongoURI(t), Database: name, Sealer: storagetest.TestSealer(t)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = mg.Database().Drop(ctx)
		_ = mg.Close()
	})
	coll := mg.Database().Collection("auditLog")
	return []engine{
		{"sqlite", lite,
			func(t *testing.T, id, after string) {
				sqlExec(t, `UPDATE audit_log SET after = ? WHERE id = ?`, after, id)
			},
			func(t *testing.T, id string) { sqlExec(t, `DELETE FROM audit_log WHERE id = ?`, id) }},
		{"ferretdb", mg,
			func(t *testing.T, id, after string) {
				res, err := coll.UpdateOne(t.Context(), bson.D{{Key: "entryId", Value: id}}, bson.D{{Key: "$set", Value: bson.D{{Key: "after", Value: after}}}})
				if err != nil || res.ModifiedCount != 1 {
					t.Fatalf("edit %s: %+v, %v", id, res, err)
				}
			},
			func(t *testing.T, id string) {
				res, err := coll.DeleteOne(t.Context(), bson.D{{Key: "entryId", Value: id}})
				if err != nil || res.DeletedCount != 1 {
					t.Fatalf("delete %s: %+v, %v", id, res, err)
				}
			}},
	}
}

// record stores n entries of the account through the service and answers their ids in
// order.
func record(t *testing.T, svc *audit.Service, account string, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		e := storage.AuditEntry{ID: fmt.Sprintf("%s-%d", account, i), AccountID: account, Method: "PATCH",
			Route: "/api/apps/:appId", RecordType: "apps", Before: `{"level":1}`, After: fmt.Sprintf(`{"level":%d}`, i+2)}
		if err := svc.Record(t.Context(), e); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, e.ID)
	}
	return ids
}

func verify(t *testing.T, s storage.Store) audit.Report {
	t.Helper()
	r, err := audit.Verify(t.Context(), s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestVerifyNamesTheEditedEntry (issue 21): chains written through the service verify;
// an entry edited in the database is named, in its account only; so is the entry after
// one deleted from the middle. The other account's chain still holds.
func TestVerifyNamesTheEditedEntry(t *testing.T) {
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) {
			svc := audit.New(e.store, audit.Config{}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			defer svc.Close()
			a := record(t, svc, "acc-a", 12)
			b := record(t, svc, "acc-b", 5)
			if r := verify(t, e.store); !r.OK() || r.Accounts != 2 || r.Entries != 17 {
				t.Fatalf("intact chains: %+v", r)
			}

			e.edit(t, a[6], `{"level":99}`)
			r := verify(t, e.store)
			if len(r.Broken) != 1 || r.Broken[0].EntryID != a[6] || r.Broken[0].Seq != 7 || r.Broken[0].AccountID != "acc-a" ||
				!strings.Contains(r.Broken[0].Reason, "changed") {
				t.Fatalf("edited entry: %+v", r)
			}

			e.remove(t, b[2])
			r = verify(t, e.store)
			if len(r.Broken) != 2 || r.Broken[1].EntryID != b[3] || !strings.Contains(r.Broken[1].Reason, "missing") {
				t.Fatalf("deleted entry: %+v", r)
			}
		})
	}
}

// TestVerifyAfterRetention: the purge removes the start of a chain; what is kept verifies
// from its oldest entry (anchored on that entry's own link), and the chain goes on.
func TestVerifyAfterRetention(t *testing.T) {
	for _, e := range engines(t) {
		t.Run(e.name, func(t *testing.T) {
			now := time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)
			var old []storage.AuditEntry
			for i := range 5 {
				old = append(old, storage.AuditEntry{ID: fmt.Sprintf("old-%d", i), AccountID: "acc", CreatedAt: now.Add(-100 * 24 * time.Hour)})
			}
			if err := e.store.AppendAudit(t.Context(), old); err != nil {
				t.Fatal(err)
			}
			svc := audit.New(e.store, audit.Config{Now: func() time.Time { return now }}, slog.New(slog.NewTextHandler(t.Output(), nil)))
			defer svc.Close()
			// The writer purged at its start: an account whose every entry is old keeps its
			// last one, which the next entries link to.
			ids := record(t, svc, "acc", 3)
			chain, err := e.store.AuditChain(t.Context(), "acc", 0, 10)
			if err != nil || len(chain) != 4 || chain[0].ID != "old-4" || chain[1].ID != ids[0] || chain[1].Seq != 6 {
				t.Fatalf("chain after the first purge: %+v, %v", chain, err)
			}
			// The next purge takes that one too; the rest verifies from seq 6.
			if n, err := e.store.DeleteAuditBefore(t.Context(), now.Add(-90*24*time.Hour)); err != nil || n != 1 {
				t.Fatalf("second purge: %d, %v", n, err)
			}
			if r := verify(t, e.store); !r.OK() || r.Entries != 3 {
				t.Fatalf("after the purges: %+v", r)
			}
			e.edit(t, ids[0], `{}`)
			if r := verify(t, e.store); len(r.Broken) != 1 || r.Broken[0].EntryID != ids[0] {
				t.Fatalf("edited oldest kept entry: %+v", r)
			}
		})
	}
}
