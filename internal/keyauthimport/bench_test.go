package keyauthimport_test

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/keyauthimport"
	"github.com/keyward/keyward/internal/testenv"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/mongo"
	"github.com/keyward/keyward/storage/sqlite"
)

// BenchmarkImportKeyAuth imports a dump of one app with KEYAUTH_BENCH_USERS users
// (default 1,000), each with a used key, a live subscription and, for one in ten, a user
// variable, and reports records written per second, on SQLite and on the MongoDB-wire
// server (when KEYWARD_TEST_MONGO_URI is set: deploy/testenv.sh sets it):
//
//	KEYAUTH_BENCH_USERS=10000 go test -run '^$' -bench ImportKeyAuth -benchtime 1x ./internal/keyauthimport/
func BenchmarkImportKeyAuth(b *testing.B) {
	n := 1000
	if v := os.Getenv("KEYAUTH_BENCH_USERS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n < 1 {
			b.Fatalf("KEYAUTH_BENCH_USERS=%q", v)
		}
	}
	dump := syntheticDump(n)
	b.Run("sqlite", func(b *testing.B) {
		benchImport(b, dump, func(b *testing.B) storage.Store {
			s, err := sqlite.Open(b.Context(), sqlite.Config{Path: filepath.Join(b.TempDir(), "keyward.db")})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			return s
		})
	})
	b.Run("mongo", func(b *testing.B) {
		if os.Getenv(testenv.EnvMongoURI) == "" {
			b.Skip("no MongoDB-wire server (run under deploy/testenv.sh)")
		}
		uri := testenv.MongoURI(b)
		benchImport(b, dump, func(b *testing.B) storage.Store {
			s, err := mongo.Open(b.Context(), mongo.Config{URI: uri, Database: testenv.UniqueName("kwbench_")})
			if err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = s.Close() })
			return s
		})
	})
}

func benchImport(b *testing.B, dump []byte, open func(*testing.B) storage.Store) {
	var records int
	var spent time.Duration
	for b.Loop() {
		b.StopTimer()
		st := open(b)
		acct := storage.Account{ID: testenv.UniqueName("acct-"), Username: testenv.UniqueName("u"), Email: testenv.UniqueName("e") + "@example.com",
			PasswordHash: "x", Role: "user", Plan: "business", CreatedAt: storage.Now(), UpdatedAt: storage.Now()}
		if err := st.CreateAccount(context.Background(), acct); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		start := time.Now()
		rep, err := keyauthimport.Import(context.Background(), st, bytes.NewReader(dump), keyauthimport.Options{AccountID: acct.ID})
		if err != nil {
			b.Fatal(err)
		}
		spent += time.Since(start)
		records += rep.Records()
	}
	b.ReportMetric(float64(records)/spent.Seconds(), "records/s")
	b.ReportMetric(float64(records)/float64(b.N), "records/op")
}

// syntheticDump writes a KeyAuth dump as mysqldump does: a CREATE TABLE per table and
// multi-row INSERTs of up to 500 rows.
func syntheticDump(n int) []byte {
	const secret = "b7e4c1d2a3f5061728394a5b6c7d8e9fb7e4c1d2a3f5061728394a5b6c7d8e9f"
	const hash = "$2y$10$kcs3KUlM165tj7g6RXRAdedlco4FWATSy5fh88MC8/mwkV1z4q8.m"
	var buf bytes.Buffer
	w := func(format string, args ...any) { fmt.Fprintf(&buf, format, args...) }
	w("CREATE TABLE `apps` (`id` int, `owner` varchar(65), `name` varchar(40), `secret` varchar(64), `enabled` int, `hwidcheck` int);\n")
	w("INSERT INTO `apps` VALUES (1,'owner','Bench App','%s',1,1);\n", secret)
	w("CREATE TABLE `subscriptions` (`id` int, `name` varchar(49), `level` varchar(49), `app` varchar(64));\n")
	w("INSERT INTO `subscriptions` VALUES (1,'default','1','%s'),(2,'premium','5','%s');\n", secret, secret)
	rows := func(table, cols string, count int, row func(i int) string) {
		w("CREATE TABLE `%s` (%s);\n", table, cols)
		for i := 0; i < count; i++ {
			if i%500 == 0 {
				if i > 0 {
					w(";\n")
				}
				w("INSERT INTO `%s` VALUES ", table)
			} else {
				w(",")
			}
			w("%s", row(i))
		}
		if count > 0 {
			w(";\n")
		}
	}
	rows("keys", "`id` int, `key` varchar(70), `note` varchar(69), `expires` varchar(49), `status` varchar(49), `level` varchar(12), `gendate` varchar(49), `usedon` int, `usedby` varchar(70), `app` varchar(64), `banned` varchar(99)",
		n, func(i int) string {
			return fmt.Sprintf("(%d,'BENCH-%06d-KEY',NULL,'2592000','Used','5','1700000000',1700003600,'user%06d','%s',NULL)", i, i, i, secret)
		})
	rows("subs", "`id` int, `user` varchar(70), `subscription` varchar(49), `expiry` varchar(49), `app` varchar(64), `key` varchar(70), `paused` int",
		n, func(i int) string {
			return fmt.Sprintf("(%d,'user%06d','premium','2145916800','%s','BENCH-%06d-KEY',0)", i, i, secret, i)
		})
	rows("users", "`id` int, `username` varchar(70), `email` varchar(40), `password` varchar(60), `hwid` varchar(2000), `app` varchar(64), `owner` varchar(65), `createdate` int, `lastlogin` int, `banned` varchar(99), `ip` varchar(49), `cooldown` int",
		n, func(i int) string {
			return fmt.Sprintf("(%d,'user%06d',NULL,'%s','HWID-%06d','%s','owner',1700000000,1700007200,NULL,'203.0.113.7',NULL)", i, i, hash, i, secret)
		})
	rows("uservars", "`id` int, `name` varchar(99), `data` varchar(500), `user` varchar(70), `app` varchar(64), `readOnly` int",
		n/10, func(i int) string {
			return fmt.Sprintf("(%d,'theme','dark','user%06d','%s',0)", i, i*10, secret)
		})
	return buf.Bytes()
}
