package backup

import (
	"context"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/keyward/keyward/storage/storagetest"
)

// TestScheduledBackups takes backups to a folder and to an S3 server started in process
// (gofakes3): each is a whole backup that verifies, retention keeps the newest Keep and
// none past MaxAge, metrics follow, and a failing destination is counted and reported.
func TestScheduledBackups(t *testing.T) {
	sealer := storagetest.TestSealer(t)
	n := sqliteNode(t, t.TempDir(), sealer)
	populate(t, n)

	backend := s3mem.New()
	if err := backend.CreateBucket("backups"); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(gofakes3.New(backend).Server())
	defer srv.Close()
	s3, err := NewS3(S3Config{Endpoint: strings.TrimPrefix(srv.URL, "http://"), Bucket: "backups", Prefix: "node1",
		AccessKey: "key", SecretKey: "secret", Region: "us-east-1", Insecure: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, dest := range []Destination{Folder{Dir: filepath.Join(t.TempDir(), "backups")}, s3} {
		t.Run(strings.Fields(dest.String())[0], func(t *testing.T) {
			reg := prometheus.NewRegistry()
			s, err := NewScheduler(SchedulerConfig{Store: n.st, Blobs: n.b, Dest: dest, Every: time.Hour,
				Retention: Retention{Keep: 2, MaxAge: 36 * time.Hour}, Info: info, Metrics: reg})
			if err != nil {
				t.Fatal(err)
			}
			clock := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			s.now = func() time.Time { return clock }
			for i := range 3 {
				res, err := s.TakeNow(t.Context(), i == 2)
				if err != nil || res.Size == 0 || res.Error != "" {
					t.Fatalf("backup %d: %+v, %v", i, res, err)
				}
				clock = clock.Add(time.Hour)
			}
			list, err := s.List(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if len(list) != 2 || list[0].Name != s.Last().Name {
				t.Fatalf("after 3 backups with Keep 2: %+v (last %s)", list, s.Last().Name)
			}
			if want := clock.Add(-time.Hour).Unix(); testutil.ToFloat64(s.lastSuccess) != float64(want) {
				t.Errorf("last success metric %v, want %v", testutil.ToFloat64(s.lastSuccess), want)
			}
			if got := testutil.ToFloat64(s.lastSize); got != float64(list[0].Size) {
				t.Errorf("last size metric %v, want %v", got, list[0].Size)
			}
			// The stored bytes are a backup that verifies with the key.
			r, _, err := s.Open(t.Context(), list[0].Name)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "dl.tar.gz")
			body, _ := io.ReadAll(r)
			_ = r.Close()
			if err := os.WriteFile(path, body, 0o600); err != nil {
				t.Fatal(err)
			}
			if _, err := Verify(path, sealer); err != nil {
				t.Errorf("downloaded backup: %v", err)
			}
			if _, _, err := s.Open(t.Context(), "../keyward.db"); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("Open of another name: %v, want ErrNotExist", err)
			}
			// Two days later one more: the others are past MaxAge.
			clock = clock.Add(48 * time.Hour)
			if _, err := s.TakeNow(t.Context(), false); err != nil {
				t.Fatal(err)
			}
			if list, _ := s.List(t.Context()); len(list) != 1 {
				t.Errorf("after MaxAge: %d backups, want 1", len(list))
			}
		})
	}

	t.Run("FailureIsCounted", func(t *testing.T) {
		s, err := NewScheduler(SchedulerConfig{Store: n.st, Blobs: n.b, Dest: failing{}, Info: info})
		if err != nil {
			t.Fatal(err)
		}
		res, err := s.TakeNow(context.Background(), true)
		if err == nil || res.Error == "" || s.Last().Error == "" {
			t.Fatalf("backup to a failing destination: %+v, %v", res, err)
		}
		if got := testutil.ToFloat64(s.failures); got != 1 {
			t.Errorf("failures %v, want 1", got)
		}
		if got := testutil.ToFloat64(s.lastSuccess); got != 0 {
			t.Errorf("last success %v after a failure, want 0", got)
		}
	})
}

type failing struct{ Folder }

func (failing) Put(context.Context, string, string) error { return errors.New("disk full") }
func (failing) String() string                            { return "failing" }
