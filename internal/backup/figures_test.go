package backup

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/keyward/keyward/internal/testenv"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/storagetest"
)

// TestFigures measures backup, restore and the export/import round trip at scale:
// KEYWARD_BACKUP_FIGURES=N users and N licenses (skipped without it; with
// KEYWARD_TEST_MONGO_URI the MongoDB-wire legs too). Figures are logged, never asserted:
//
//	KEYWARD_BACKUP_FIGURES=100000 bash deploy/testenv.sh go test -run TestFigures -v -timeout 60m ./internal/backup/
func TestFigures(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("KEYWARD_BACKUP_FIGURES"))
	if n <= 0 {
		t.Skip("set KEYWARD_BACKUP_FIGURES=N to measure with N users and N licenses")
	}
	sealer := storagetest.TestSealer(t)
	ctx := t.Context()
	a := sqliteNode(t, t.TempDir(), sealer)
	p := populate(t, a)
	start := time.Now()
	const batchSize = 1000
	for i := 0; i < n; i += batchSize {
		ls := make([]storage.License, 0, batchSize)
		for j := i; j < min(n, i+batchSize); j++ {
			now := storage.Now()
			u := storage.AppUser{ID: fmt.Sprintf("fig-user-%07d", j), AppID: p.App.ID, Username: fmt.Sprintf("figure%07d", j),
				PasswordHash: "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA", Enabled: true, CreatedAt: now, UpdatedAt: now}
			if err := a.st.CreateUser(ctx, u); err != nil {
				t.Fatal(err)
			}
			ls = append(ls, storage.License{ID: fmt.Sprintf("fig-lic-%07d", j), AppID: p.App.ID, Key: fmt.Sprintf("FIG-%07d-KEY", j),
				Level: 1, MaxUses: 1, Enabled: true, CreatedAt: now, UpdatedAt: now})
		}
		if err := a.st.CreateLicenses(ctx, ls); err != nil {
			t.Fatal(err)
		}
	}
	dbSize := fileSize(filepath.Join(a.dataDir, databaseName))
	t.Logf("populated %d users + %d licenses in %s (SQLite database %.1f MiB)", n, n, time.Since(start).Round(time.Millisecond), mib(dbSize))

	dir := t.TempDir()
	backupPath := filepath.Join(dir, "backup.tar.gz")
	timed(t, "SQLite backup (snapshot)", backupPath, func() error {
		f, err := os.Create(backupPath)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = Take(ctx, a.st, a.b, f, info)
		return err
	})
	timed(t, "SQLite restore", "", func() error {
		_, _, err := Restore(ctx, backupPath, Target{DataDir: t.TempDir(), Sealer: sealer})
		return err
	})
	exportPath := filepath.Join(dir, "export.tar.gz")
	timed(t, "SQLite export", exportPath, func() error {
		f, err := os.Create(exportPath)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = Export(ctx, a.st, a.b, f, info)
		return err
	})
	timed(t, "import into SQLite (restore of the archive)", "", func() error {
		_, _, err := Restore(ctx, exportPath, Target{DataDir: t.TempDir(), Sealer: sealer})
		return err
	})
	if os.Getenv(testenv.EnvMongoURI) == "" {
		return
	}
	uri := testenv.MongoURI(t)
	roundTrip := time.Now()
	m := mongoNode(t, uri, testenv.UniqueName("kwfig_"), nil)
	timed(t, "import into MongoDB wire (FerretDB)", "", func() error {
		_, err := Import(ctx, exportPath, m.st, m.b)
		return err
	})
	mongoBackup := filepath.Join(dir, "mongo.tar.gz")
	timed(t, "MongoDB-wire backup (archive)", mongoBackup, func() error {
		f, err := os.Create(mongoBackup)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = Take(ctx, m.st, m.b, f, info)
		return err
	})
	timed(t, "MongoDB-wire restore into an empty database", "", func() error {
		_, _, err := Restore(ctx, mongoBackup, Target{MongoURI: uri, MongoDatabase: testenv.UniqueName("kwfig_"), Sealer: sealer})
		return err
	})
	timed(t, "import back into SQLite", "", func() error {
		_, _, err := Restore(ctx, mongoBackup, Target{DataDir: t.TempDir(), Sealer: sealer})
		return err
	})
	t.Logf("round trip SQLite → MongoDB wire → SQLite (import, backup, import): %s", time.Since(roundTrip).Round(time.Millisecond))
}

func timed(t *testing.T, what, out string, f func() error) {
	t.Helper()
	start := time.Now()
	if err := f(); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	took := time.Since(start).Round(time.Millisecond)
	if out != "" {
		t.Logf("%s: %s, %.2f MiB (%d bytes)", what, took, mib(fileSize(out)), fileSize(out))
		return
	}
	t.Logf("%s: %s", what, took)
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return st.Size()
}

func mib(n int64) float64 { return float64(n) / (1 << 20) }
