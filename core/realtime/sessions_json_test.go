package realtime

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"
)

// TestSessionInfoAppendJSON: the hand encoding is encoding/json's, byte for byte.
func TestSessionInfoAppendJSON(t *testing.T) {
	// AppendJSON writes each field by hand: a field added to SessionInfo must be added
	// there, and to the cases below.
	if n := reflect.TypeFor[SessionInfo]().NumField(); n != 7 {
		t.Fatalf("SessionInfo has %d fields; AppendJSON and this test know 7", n)
	}
	at := time.Date(2026, 11, 28, 17, 30, 0, 123456789, time.UTC)
	for _, s := range []SessionInfo{
		{},
		{ID: "c1", UserID: "u1", Username: "alice", IP: "127.0.0.1", ConnectedAt: at},
		{ID: "c2", UserID: "u2", Username: "<b>&\"quoted\"\\", IP: "::1", ConnectedAt: at.In(time.FixedZone("X", 3600)), Status: "away"},
		{ID: "c3", Username: "émilie \u2028 \x01 \xff", ConnectedAt: at.Truncate(time.Second)},
		{ID: "c4", ConnectedAt: at, Metadata: map[string]any{"level": 3, "tags": []any{"a"}}},
		{ID: "c5", ConnectedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
	} {
		want, wantErr := json.Marshal(s)
		got, err := s.AppendJSON([]byte("prefix:"))
		if (err != nil) != (wantErr != nil) {
			t.Fatalf("%+v: error %v, encoding/json's %v", s, err, wantErr)
		}
		if err == nil && string(got) != "prefix:"+string(want) {
			t.Errorf("%+v:\n got %s\nwant prefix:%s", s, got, want)
		}
	}
}
