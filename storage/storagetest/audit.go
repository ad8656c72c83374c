package storagetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

var auditTests = []subtest{
	{"AuditRoundTripAndFilters", testAuditRoundTrip},
	{"AuditRetriedBatch", testAuditRetriedBatch},
	{"AuditDeleteBefore", testAuditDeleteBefore},
}

func auditEntry(account, app, actor, record string, at time.Time) storage.AuditEntry {
	n := seq.Add(1)
	return storage.AuditEntry{ID: fmt.Sprintf("audit-%d", n), AccountID: account, AppID: app, ActorType: storage.ActorAPIKey,
		ActorID: actor, ActorName: "shop bot", IP: "203.0.113.5", Method: "PATCH", Route: "/api/apps/:appId/users/:userId",
		Path: "/api/apps/" + app + "/users/u1", RecordType: record, RecordID: fmt.Sprintf("rec-%d", n), Status: 200,
		Before: `{"level":1}`, After: `{"level":2}`, CreatedAt: at}
}

func auditIDs(list []storage.AuditEntry) []string {
	var out []string
	for _, e := range list {
		out = append(out, e.ID)
	}
	return out
}

func testAuditRoundTrip(t *testing.T, s storage.Store) {
	ctx := t.Context()
	e1 := auditEntry("acc1", "app1", "key1", "users", ms(0))
	e2 := auditEntry("acc1", "app2", "tok1", "licenses", ms(time.Minute))
	e3 := auditEntry("acc1", "", "key1", "account", ms(2*time.Minute))
	e3.Before, e3.After, e3.ActorType = "", "", storage.ActorSession
	e4 := auditEntry("acc2", "app9", "key9", "users", ms(3*time.Minute))
	if err := s.AppendAudit(ctx, []storage.AuditEntry{e1, e2}); err != nil {
		t.Fatalf("AppendAudit: %v", err)
	}
	if err := s.AppendAudit(ctx, []storage.AuditEntry{e3, e4}); err != nil {
		t.Fatalf("AppendAudit: %v", err)
	}
	if err := s.AppendAudit(ctx, nil); err != nil {
		t.Fatalf("AppendAudit of none: %v", err)
	}
	list, total, err := s.ListAudit(ctx, storage.AuditQuery{AccountID: "acc1"})
	if err != nil {
		t.Fatalf("ListAudit: %v", err)
	}
	if total != 3 || fmt.Sprint(auditIDs(list)) != fmt.Sprint([]string{e3.ID, e2.ID, e1.ID}) {
		t.Fatalf("account list = %v (%d)", auditIDs(list), total)
	}
	if d := diff(e1, list[2]); d != "" {
		t.Errorf("round trip: %s", d)
	}
	if d := diff(e3, list[0]); d != "" {
		t.Errorf("round trip of a bare entry: %s", d)
	}
	cases := []struct {
		q    storage.AuditQuery
		want []string
		tot  int
	}{
		{storage.AuditQuery{}, []string{e4.ID, e3.ID, e2.ID, e1.ID}, 4},
		{storage.AuditQuery{AccountID: "acc1", AppID: "app2"}, []string{e2.ID}, 1},
		{storage.AuditQuery{AccountID: "acc1", ActorID: "key1"}, []string{e3.ID, e1.ID}, 2},
		{storage.AuditQuery{RecordType: "users"}, []string{e4.ID, e1.ID}, 2},
		{storage.AuditQuery{AccountID: "acc1", Since: ms(time.Minute), Until: ms(2 * time.Minute)}, []string{e2.ID}, 1},
		{storage.AuditQuery{Page: storage.Page{Limit: 2, Offset: 1}}, []string{e3.ID, e2.ID}, 4},
		{storage.AuditQuery{AccountID: "nobody"}, nil, 0},
	}
	for _, c := range cases {
		list, total, err := s.ListAudit(ctx, c.q)
		if err != nil {
			t.Fatalf("ListAudit(%+v): %v", c.q, err)
		}
		if total != c.tot || fmt.Sprint(auditIDs(list)) != fmt.Sprint(c.want) {
			t.Errorf("ListAudit(%+v) = %v (%d), want %v (%d)", c.q, auditIDs(list), total, c.want, c.tot)
		}
	}
}

func testAuditRetriedBatch(t *testing.T, s storage.Store) {
	ctx := t.Context()
	e1 := auditEntry("acc1", "app1", "key1", "users", ms(0))
	e2 := auditEntry("acc1", "app1", "key1", "users", ms(time.Second))
	if err := s.AppendAudit(ctx, []storage.AuditEntry{e1}); err != nil {
		t.Fatalf("AppendAudit: %v", err)
	}
	// The retry of a batch of which e1 went in: e1 once, e2 added.
	changed := e1
	changed.After = `{"changed":true}`
	if err := s.AppendAudit(ctx, []storage.AuditEntry{changed, e2}); err != nil {
		t.Fatalf("retried AppendAudit: %v", err)
	}
	list, total, err := s.ListAudit(ctx, storage.AuditQuery{AccountID: "acc1"})
	if err != nil || total != 2 || len(list) != 2 || list[1].After != e1.After {
		t.Fatalf("after retry: %+v (%d) %v", list, total, err)
	}
}

func testAuditDeleteBefore(t *testing.T, s storage.Store) {
	ctx := t.Context()
	old := auditEntry("acc1", "app1", "key1", "users", ms(-100*24*time.Hour))
	edge := auditEntry("acc1", "app1", "key1", "users", ms(-90*24*time.Hour))
	young := auditEntry("acc1", "app1", "key1", "users", ms(0))
	if err := s.AppendAudit(ctx, []storage.AuditEntry{old, edge, young}); err != nil {
		t.Fatalf("AppendAudit: %v", err)
	}
	n, err := s.DeleteAuditBefore(ctx, ms(-90*24*time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("DeleteAuditBefore = %d, %v; want 1", n, err)
	}
	list, _, err := s.ListAudit(ctx, storage.AuditQuery{})
	if err != nil || fmt.Sprint(auditIDs(list)) != fmt.Sprint([]string{young.ID, edge.ID}) {
		t.Fatalf("left = %v, %v", auditIDs(list), err)
	}
}
