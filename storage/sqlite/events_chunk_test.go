package sqlite

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

// TestAppendEventsInChunks: a batch bigger than a statement's chunk (two full chunks and a
// rest, two apps) gets positions in the batch's order, each app's seqs one after the other,
// and reads back in that order with its payloads.
func TestAppendEventsInChunks(t *testing.T) {
	s := openTemp(t, filepath.Join(t.TempDir(), "keyward.db"))
	now := storage.Truncate(time.Now())
	seqs := map[string]int64{} // each app's last seq
	for round := range 2 {
		const n = 2*eventChunk + 5
		evs := make([]storage.EventRecord, n)
		for i := range evs {
			evs[i] = storage.EventRecord{ID: fmt.Sprintf("ev-%d-%02d", round, i), AppID: fmt.Sprintf("app-%d", i%2),
				Type: "user.login", Payload: []byte(fmt.Sprintf(`{"i":%d}`, i)), At: now}
		}
		if i := 3; round == 1 {
			evs[i].Payload = nil // stored as empty
		}
		if err := s.AppendEvents(t.Context(), evs); err != nil {
			t.Fatalf("round %d: AppendEvents: %v", round, err)
		}
		for i := range evs {
			if i > 0 && evs[i].Pos <= evs[i-1].Pos {
				t.Fatalf("round %d: event %d at pos %d after pos %d", round, i, evs[i].Pos, evs[i-1].Pos)
			}
			seqs[evs[i].AppID]++
			if evs[i].Seq != seqs[evs[i].AppID] {
				t.Errorf("round %d: event %d of %s has seq %d, want %d", round, i, evs[i].AppID, evs[i].Seq, seqs[evs[i].AppID])
			}
		}
		got, err := s.ReadEvents(t.Context(), evs[0].Pos-1, n)
		if err != nil || len(got) != n {
			t.Fatalf("round %d: ReadEvents: %d events, %v", round, len(got), err)
		}
		for i := range got {
			want := string(evs[i].Payload)
			if got[i].ID != evs[i].ID || got[i].Pos != evs[i].Pos || got[i].Seq != evs[i].Seq || string(got[i].Payload) != want {
				t.Errorf("round %d: read %d: %+v, want %+v", round, i, got[i], evs[i])
			}
		}
	}
}
