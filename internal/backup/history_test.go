package backup

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/storagetest"
)

// olderArchive is a Source shaped as an archive written before the delivery history
// existed: the queue's kind carries the finished deliveries too, and the history's kind
// is empty.
type olderArchive struct{ Source }

func (o olderArchive) ArchiveRecords(ctx context.Context, kind string, emit func(any) error) error {
	switch kind {
	case storage.KindDeliveryHistory:
		return nil
	case storage.KindDeliveries:
		if err := o.Source.ArchiveRecords(ctx, storage.KindDeliveries, emit); err != nil {
			return err
		}
		return o.Source.ArchiveRecords(ctx, storage.KindDeliveryHistory, emit)
	}
	return o.Source.ArchiveRecords(ctx, kind, emit)
}

// TestOlderArchiveRestoresFinishedDeliveriesToHistory: an archive whose finished
// deliveries are in the queue's kind restores into a data dir (its count check taking
// the queue and the history as one) with them in the history and the pending ones
// queued.
func TestOlderArchiveRestoresFinishedDeliveriesToHistory(t *testing.T) {
	sealer := storagetest.TestSealer(t)
	a := sqliteNode(t, t.TempDir(), sealer)
	populate(t, a)
	ids := func(n node, kind string) []string {
		var out []string
		if err := n.st.ArchiveRecords(t.Context(), kind, func(r any) error {
			out = append(out, r.(storage.Delivery).ID)
			return nil
		}); err != nil {
			t.Fatalf("ArchiveRecords(%s): %v", kind, err)
		}
		slices.Sort(out)
		return out
	}
	queued, finished := ids(a, storage.KindDeliveries), ids(a, storage.KindDeliveryHistory)
	if len(queued) == 0 || len(finished) == 0 {
		t.Fatalf("populated %d queued and %d finished deliveries, want some of each", len(queued), len(finished))
	}

	path := filepath.Join(t.TempDir(), "older.tar.gz")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := Export(t.Context(), olderArchive{a.st}, a.b, f, info)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if m.Counts[storage.KindDeliveries] != len(queued)+len(finished) || m.Counts[storage.KindDeliveryHistory] != 0 {
		t.Fatalf("older archive counts %d queued, %d history; want %d and 0", m.Counts[storage.KindDeliveries],
			m.Counts[storage.KindDeliveryHistory], len(queued)+len(finished))
	}

	dir := t.TempDir()
	if _, _, err := Restore(t.Context(), path, Target{DataDir: dir, Sealer: sealer}); err != nil {
		t.Fatalf("Restore of an older archive: %v", err)
	}
	r := sqliteNode(t, dir, sealer)
	if got := ids(r, storage.KindDeliveries); !slices.Equal(got, queued) {
		t.Errorf("queued after the restore = %v, want %v", got, queued)
	}
	if got := ids(r, storage.KindDeliveryHistory); !slices.Equal(got, finished) {
		t.Errorf("history after the restore = %v, want %v", got, finished)
	}
}
