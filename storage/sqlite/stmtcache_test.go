package sqlite

import (
	"database/sql"
	"path/filepath"
	"testing"
)

// The connection's statement cache answers what the driver answers without it: the same
// query again while its rows are still read (in one transaction), a statement that
// failed, a statement evicted while its rows are read, and a schema change after a
// statement was kept.
func TestStatementCacheKeepsAnswers(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "c.db")
	c, err := newCachingConnector(path+"?_journal_mode=WAL", 2)
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection: every call below meets the same cache

	mustExec := func(q string, args ...any) {
		t.Helper()
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	mustExec(`CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT NOT NULL UNIQUE)`)
	const ins = `INSERT INTO t (id, v) VALUES (?, ?)`
	for i, v := range []string{"a", "b", "c"} {
		mustExec(ins, i+1, v)
	}
	// A unique violation fails the cached insert; the next one succeeds.
	if _, err := db.ExecContext(ctx, ins, 9, "a"); err == nil {
		t.Fatal("a duplicate insert succeeded")
	}
	mustExec(ins, 4, "d")

	// The same query inside the rows of the first: each gets the right answer.
	const byID = `SELECT v FROM t WHERE id >= ? ORDER BY id`
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := tx.QueryContext(ctx, byID, 1)
	if err != nil {
		t.Fatal(err)
	}
	var outer, inner []string
	for rows.Next() {
		var v string
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		outer = append(outer, v)
		if len(outer) == 2 {
			var w string
			if err := tx.QueryRowContext(ctx, byID, 4).Scan(&w); err != nil {
				t.Fatal(err)
			}
			inner = append(inner, w)
			// Two more queries with a cache of 2 evict the outer rows' statement.
			var n int
			for _, q := range []string{`SELECT count(*) FROM t`, `SELECT count(*) FROM t WHERE id > 0`} {
				if err := tx.QueryRowContext(ctx, q).Scan(&n); err != nil || n != 4 {
					t.Fatalf("%s: %d, %v", q, n, err)
				}
			}
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	_ = rows.Close()
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := len(outer); got != 4 || outer[0] != "a" || outer[3] != "d" || len(inner) != 1 || inner[0] != "d" {
		t.Fatalf("outer %v, inner %v", outer, inner)
	}

	// Kept statements see a schema change.
	var v string
	if err := db.QueryRowContext(ctx, `SELECT * FROM t WHERE id = ?`, 1).Scan(new(int), &v); err != nil || v != "a" {
		t.Fatalf("before: %q, %v", v, err)
	}
	mustExec(`ALTER TABLE t ADD COLUMN w TEXT NOT NULL DEFAULT 'x'`)
	var w string
	if err := db.QueryRowContext(ctx, `SELECT * FROM t WHERE id = ?`, 1).Scan(new(int), &v, &w); err != nil || w != "x" {
		t.Fatalf("after: %q, %v", w, err)
	}
	// Another connection's kept read sees each later write: no statement holds a read
	// snapshot open between uses.
	rc, err := newCachingConnector(path, 2)
	if err != nil {
		t.Fatal(err)
	}
	reader := sql.OpenDB(rc)
	defer reader.Close()
	reader.SetMaxOpenConns(1)
	for _, want := range []string{"a", "y", "z"} {
		if want != "a" {
			mustExec(`UPDATE t SET v = ? WHERE id = 1`, want)
		}
		if err := reader.QueryRowContext(ctx, `SELECT v FROM t WHERE id = ?`, 1).Scan(&v); err != nil || v != want {
			t.Fatalf("reader: %q, %v; want %q", v, err, want)
		}
	}
}
