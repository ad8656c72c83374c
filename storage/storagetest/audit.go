package storagetest

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

var auditTests = []subtest{
	{"AuditRoundTripAndFilters", testAuditRoundTrip},
	{"AuditRetriedBatch", testAuditRetriedBatch},
	{"AuditDeleteBefore", testAuditDeleteBefore},
	{"AuditChain", testAuditChain},
	{"AuditChainRacingAppends", testAuditChainRacingAppends},
	{"AuditDeleteKeepsChainEnd", testAuditDeleteKeepsChainEnd},
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
	// The store chains what it appends; the rest is as given.
	for _, w := range []*storage.AuditEntry{&e1, &e3} {
		for _, g := range list {
			if g.ID == w.ID {
				w.Seq, w.PrevHash, w.Hash = g.Seq, g.PrevHash, g.Hash
			}
		}
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

// checkChain fails unless the account's chained entries are seq from..to, each linked to
// the one before and hashed as stored; it answers them.
func checkChain(t *testing.T, s storage.Store, account string, from, to int64) []storage.AuditEntry {
	t.Helper()
	chain, err := s.AuditChain(t.Context(), account, 0, 10_000)
	if err != nil {
		t.Fatalf("AuditChain(%s): %v", account, err)
	}
	if int64(len(chain)) != to-from+1 {
		t.Fatalf("chain of %s: %d entries, want seq %d..%d", account, len(chain), from, to)
	}
	for i, e := range chain {
		if e.Seq != from+int64(i) {
			t.Fatalf("chain of %s: entry %d has seq %d, want %d", account, i, e.Seq, from+int64(i))
		}
		if e.Hash != storage.AuditHash(e) {
			t.Fatalf("chain of %s: seq %d: stored hash does not match the entry", account, e.Seq)
		}
		if i > 0 && e.PrevHash != chain[i-1].Hash {
			t.Fatalf("chain of %s: seq %d does not link to seq %d", account, e.Seq, chain[i-1].Seq)
		}
	}
	return chain
}

// testAuditChain: each account has its own chain from 1, linked by hashes; the first
// entry links to nothing; a page of the walk starts after the given seq; whatever the
// caller put in the chain members is replaced.
func testAuditChain(t *testing.T, s storage.Store) {
	ctx := t.Context()
	a1 := auditEntry("acc1", "app1", "key1", "users", ms(0))
	a1.Seq, a1.PrevHash, a1.Hash = 99, "forged", "forged"
	b1 := auditEntry("acc2", "app9", "key9", "users", ms(0))
	a2 := auditEntry("acc1", "app1", "key1", "users", ms(time.Second))
	if err := s.AppendAudit(ctx, []storage.AuditEntry{a1, b1, a2}); err != nil {
		t.Fatalf("AppendAudit: %v", err)
	}
	a3 := auditEntry("acc1", "", "tok", "account", ms(2*time.Second))
	if err := s.AppendAudit(ctx, []storage.AuditEntry{a3}); err != nil {
		t.Fatalf("AppendAudit: %v", err)
	}
	chain := checkChain(t, s, "acc1", 1, 3)
	if chain[0].ID != a1.ID || chain[0].PrevHash != "" || chain[2].ID != a3.ID {
		t.Fatalf("chain of acc1: %+v", chain)
	}
	checkChain(t, s, "acc2", 1, 1)
	page, err := s.AuditChain(ctx, "acc1", 1, 1)
	if err != nil || len(page) != 1 || page[0].ID != a2.ID {
		t.Fatalf("AuditChain after 1, limit 1 = %+v, %v", page, err)
	}
	accounts, err := s.AuditAccounts(ctx)
	if err != nil || fmt.Sprint(accounts) != "[acc1 acc2]" {
		t.Fatalf("AuditAccounts = %v, %v", accounts, err)
	}
	// A retried batch adds nothing to the chain.
	if err := s.AppendAudit(ctx, []storage.AuditEntry{a2, a3}); err != nil {
		t.Fatalf("retried AppendAudit: %v", err)
	}
	checkChain(t, s, "acc1", 1, 3)
}

// testAuditChainRacingAppends: writers appending to one account at once (as two nodes
// would: the store has no lock of its own across processes) still make one chain with
// every entry once.
func testAuditChainRacingAppends(t *testing.T, s storage.Store) {
	const writers, each = 4, 15
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				e := auditEntry("racy", "app1", fmt.Sprintf("writer-%d", w), "users", ms(time.Duration(i)*time.Millisecond))
				if err := s.AppendAudit(t.Context(), []storage.AuditEntry{e}); err != nil {
					errs <- err
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("racing AppendAudit: %v", err)
	}
	chain := checkChain(t, s, "racy", 1, writers*each)
	seen := map[string]bool{}
	for _, e := range chain {
		if seen[e.ID] {
			t.Fatalf("entry %s twice in the chain", e.ID)
		}
		seen[e.ID] = true
	}
}

// testAuditDeleteKeepsChainEnd: the purge removes only the start of a chain: an old entry
// after a kept one stays (a node with a slow clock wrote it), and an account whose every
// entry is old keeps its last one, which the next append links to.
func testAuditDeleteKeepsChainEnd(t *testing.T, s storage.Store) {
	ctx := t.Context()
	old1 := auditEntry("acc1", "app1", "key1", "users", ms(-100*24*time.Hour))
	young := auditEntry("acc1", "app1", "key1", "users", ms(0))
	skewed := auditEntry("acc1", "app1", "key1", "users", ms(-95*24*time.Hour)) // after young in the chain
	gone1 := auditEntry("acc2", "app2", "key2", "users", ms(-100*24*time.Hour))
	gone2 := auditEntry("acc2", "app2", "key2", "users", ms(-99*24*time.Hour))
	if err := s.AppendAudit(ctx, []storage.AuditEntry{old1, young, skewed, gone1, gone2}); err != nil {
		t.Fatalf("AppendAudit: %v", err)
	}
	n, err := s.DeleteAuditBefore(ctx, ms(-90*24*time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("DeleteAuditBefore = %d, %v; want 2 (old1, gone1)", n, err)
	}
	kept := checkChain(t, s, "acc1", 2, 3)
	if kept[0].ID != young.ID || kept[1].ID != skewed.ID {
		t.Fatalf("acc1 kept %v", auditIDs(kept))
	}
	if tip := checkChain(t, s, "acc2", 2, 2); tip[0].ID != gone2.ID {
		t.Fatalf("acc2 kept %v, want its last entry", auditIDs(tip))
	}
	next := auditEntry("acc2", "app2", "key2", "users", ms(0))
	if err := s.AppendAudit(ctx, []storage.AuditEntry{next}); err != nil {
		t.Fatalf("AppendAudit: %v", err)
	}
	checkChain(t, s, "acc2", 2, 3)
}
