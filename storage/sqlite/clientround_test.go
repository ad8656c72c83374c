package sqlite

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

// TestSaveClientRoundInChunks: a round bigger than a statement's chunk (two full chunks
// and a rest) stores every session, and a second round over some of them (a chunk's upsert)
// replaces their columns and leaves the others as they were.
func TestSaveClientRoundInChunks(t *testing.T) {
	s := openTemp(t, filepath.Join(t.TempDir(), "keyward.db"))
	now := storage.Truncate(time.Now())
	const n = 2*sessionChunk + 5
	batch := make([]storage.ClientSession, n)
	for i := range batch {
		batch[i] = storage.ClientSession{TokenHash: fmt.Sprintf("tok-%02d", i), AppID: "app", AccountID: "acc",
			UserID: fmt.Sprintf("user-%d", i), IP: "127.0.0.1", Version: "1.0", CreatedAt: now, LoginAt: now, ExpiresAt: now.Add(time.Hour)}
	}
	if err := s.SaveClientRound(t.Context(), batch, nil); err != nil {
		t.Fatalf("SaveClientRound: %v", err)
	}
	later := now.Add(2 * time.Hour)
	again := make([]storage.ClientSession, sessionChunk+1)
	for i := range again {
		again[i] = batch[i*2]
		again[i].ExpiresAt = later
		again[i].Version = "2.0"
	}
	if err := s.SaveClientRound(t.Context(), again, nil); err != nil {
		t.Fatalf("second SaveClientRound: %v", err)
	}
	for i, want := range batch {
		if i%2 == 0 && i/2 < len(again) {
			want = again[i/2]
		}
		got, err := s.GetClientSession(t.Context(), want.TokenHash)
		if err != nil {
			t.Fatalf("session %d: %v", i, err)
		}
		if got.UserID != want.UserID || got.Version != want.Version || !got.ExpiresAt.Equal(want.ExpiresAt) || got.AppID != "app" {
			t.Errorf("session %d: got %+v, want %+v", i, got, want)
		}
	}
}
