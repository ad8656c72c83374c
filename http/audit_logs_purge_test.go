package httpapi_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/google/uuid"

	ts "github.com/keyward/keyward/internal/testserver"
	"github.com/keyward/keyward/storage"
)

// oldAndNewLogs stores n entries of the app two days old and one of now, directly.
func oldAndNewLogs(t *testing.T, st storage.Store, appID string, n int) {
	t.Helper()
	now := storage.Now()
	var list []storage.LogEntry
	for i := range n {
		list = append(list, storage.LogEntry{ID: uuid.NewString(), AppID: appID, Event: "user.login", Level: "INFO",
			CreatedAt: now.Add(-48*time.Hour - time.Duration(i)*time.Second)})
	}
	list = append(list, storage.LogEntry{ID: uuid.NewString(), AppID: appID, Event: "user.login", Level: "INFO", CreatedAt: now})
	if err := st.InsertLogs(t.Context(), list); err != nil {
		t.Fatal(err)
	}
}

// TestLogsPurgeAuditedWithTheChange: on both engine pairs, the purge of an app's logs is
// stored as an intent with its audit entry in one write before any entry goes (issue 21),
// so its entry is counted with_change, never after_change; it is listed once at the
// answer, names the app and holds the days asked and the cutoff; the answer counts the
// entries removed (SPEC 4.8), the newer one stays, and no intent is left.
func TestLogsPurgeAuditedWithTheChange(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		s := ts.Start(t, e)
		o := newOwner(t, s)
		a := api{t, s, o.Token}
		appID, _ := a.createApp("Purged")
		st := s.Node.Core().Store
		oldAndNewLogs(t, st, appID, 5)
		r := a.do("DELETE", "/api/apps/"+appID+"/logs?days=1", nil)
		expectOK(t, r, http.StatusOK)
		if n, ok := r.Data()["deleted"].(float64); !ok || n != 5 {
			t.Fatalf("purge answered %s, want deleted 5", r.Raw)
		}
		// Not polled: the entry was stored with the intent, before the answer.
		l := s.Do(t, ts.Req{Method: "GET", Path: "/api/audit?recordType=logs", Token: o.Token})
		expectOK(t, l, http.StatusOK)
		list := l.Data()["entries"].([]any)
		if len(list) != 1 {
			t.Fatalf("purge entries listed at the answer: %s", l.Raw)
		}
		en := list[0].(map[string]any)
		if en["method"] != "DELETE" || en["route"] != "/api/apps/:appId/logs" {
			t.Fatalf("purge entry: %v", en)
		}
		after, _ := en["after"].(map[string]any)
		if en["appId"] != appID || en["recordId"] != appID || after["days"] != float64(1) || after["before"] == nil {
			t.Fatalf("purge entry: %v", en)
		}
		const route = "DELETE /api/apps/:appId/logs"
		if got := auditWrittenCounts(t, s); got[route+" with_change"] != 1 || got[route+" after_change"] != 0 {
			t.Fatalf("purge entries: %d with the change, %d after it; want 1 and 0", got[route+" with_change"], got[route+" after_change"])
		}
		if _, total, err := st.ListLogs(t.Context(), appID, storage.LogQuery{}); err != nil || total != 1 {
			t.Fatalf("entries left: %d, %v; want the newer one", total, err)
		}
		if left, err := st.LogPurges(t.Context()); err != nil || len(left) != 0 {
			t.Fatalf("intents left after the answer: %v, %v", left, err)
		}
	})
}

// purgeEntry is the audit outbox of a purge a test stores as a stopped node would have.
type purgeEntry struct{ e storage.AuditEntry }

func (p *purgeEntry) TakeAudit() (storage.AuditEntry, bool) { return p.e, true }
func (p *purgeEntry) AuditStored()                          {}

type noEventsOutbox struct{}

func (noEventsOutbox) Take() []storage.EventRecord  { return nil }
func (noEventsOutbox) Stored([]storage.EventRecord) {}

// TestLogsPurgeLeftByAStoppedNodeIsFinished: on both engine pairs, a purge whose intent
// and entry were stored by a node that stopped before deleting anything is finished by
// the next node at its start, to the intent's cutoff (an entry written since, newer,
// stays), and its audit entry is there once.
func TestLogsPurgeLeftByAStoppedNodeIsFinished(t *testing.T) {
	ts.Each(t, func(t *testing.T, e ts.Engines) {
		env := ts.Env(t, e)
		s := ts.StartEnv(t, env)
		o := newOwner(t, s)
		a := api{t, s, o.Token}
		appID, _ := a.createApp("Stopped purge")
		st := s.Node.Core().Store
		oldAndNewLogs(t, st, appID, 7)
		now := storage.Now()
		p := storage.LogPurge{ID: uuid.NewString(), AppID: appID, Days: 1, Before: now.Add(-24 * time.Hour), AccountID: o.ID,
			Actor: o.Username, RequestID: "stopped-node", CreatedAt: now, TouchedAt: now}
		entry := storage.AuditEntry{ID: uuid.NewString(), AccountID: o.ID, AppID: appID, ActorType: storage.ActorSession,
			ActorName: o.Username, Method: "DELETE", Route: "/api/apps/:appId/logs", Path: "/api/apps/" + appID + "/logs",
			RecordType: "logs", RecordID: appID, Status: http.StatusOK, After: fmt.Sprintf(`{"days":1,"before":%q}`, p.Before.Format(time.RFC3339Nano)),
			CreatedAt: now}
		ctx := storage.WithAuditOutbox(storage.WithEventOutbox(t.Context(), noEventsOutbox{}), &purgeEntry{entry})
		if err := st.BeginLogPurge(ctx, p); err != nil {
			t.Fatal(err)
		}
		s.Stop() // before any entry went: the intent is only two minutes stale, no janitor of s took it

		s2 := ts.StartEnv(t, env)
		st2 := s2.Node.Core().Store
		for i := 0; ; i++ {
			left, err := st2.LogPurges(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			if len(left) == 0 {
				break
			}
			if i == 1500 {
				t.Fatalf("the stopped node's purge was not finished in 30 s: %v", left)
			}
			time.Sleep(20 * time.Millisecond)
		}
		if list, total, err := st2.ListLogs(t.Context(), appID, storage.LogQuery{}); err != nil || total != 1 || !list[0].CreatedAt.After(p.Before) {
			t.Fatalf("entries left: %d, %v; want the newer one only", total, err)
		}
		token := login(t, s2, o.Username, o.Password, "").Data()["token"].(string)
		if en := entryOf(t, auditEntries(t, s2, token, "/api/audit?recordType=logs", 1), "DELETE", "/api/apps/:appId/logs"); en["id"] != entry.ID {
			t.Fatalf("the purge's entry: %v, want %s", en, entry.ID)
		}
	})
}
