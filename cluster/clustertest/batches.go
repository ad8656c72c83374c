package clustertest

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/keyward/keyward/cluster"
)

// testBatchesGetValues: GetValues answers every key in order, nil for the absent ones.
func testBatchesGetValues(t *testing.T, e cluster.Engine) {
	ctx := ctxT(t)
	if got, err := e.GetValues(ctx, nil); err != nil || len(got) != 0 {
		t.Fatalf("GetValues(nil) = %q, %v", got, err)
	}
	keys := make([]string, 300)
	for i := range keys {
		keys[i] = fmt.Sprintf("batch:%d", i)
		if i%3 != 0 {
			setValue(t, e, keys[i], []byte(keys[i]+"-value"), time.Minute)
		}
	}
	got, err := e.GetValues(ctx, keys)
	if err != nil || len(got) != len(keys) {
		t.Fatalf("GetValues: %d answers, %v", len(got), err)
	}
	for i, v := range got {
		want := keys[i] + "-value"
		if i%3 == 0 {
			if v != nil {
				t.Fatalf("GetValues[%d] of an absent key = %q", i, v)
			}
			continue
		}
		if string(v) != want {
			t.Fatalf("GetValues[%d] = %q, want %q", i, v, want)
		}
	}
}

// testBatchesPutLeases: PutLeases writes each value and each membership with its ttl,
// renews what is there, and leases expire as their parts would.
func testBatchesPutLeases(t *testing.T, e cluster.Engine) {
	ctx := ctxT(t)
	if err := e.PutLeases(ctx, nil); err != nil {
		t.Fatalf("PutLeases(nil): %v", err)
	}
	var leases []cluster.Lease
	for i := range 50 {
		id := fmt.Sprintf("sock%02d", i)
		leases = append(leases, cluster.Lease{Key: "lease:" + id, Value: []byte(id), Member: id,
			Sets: []string{"lease-app", "lease-user:" + id}, TTL: time.Minute})
	}
	leases = append(leases, cluster.Lease{Member: "short", Sets: []string{"lease-app"}, TTL: 300 * time.Millisecond})
	if err := e.PutLeases(ctx, leases); err != nil {
		t.Fatalf("PutLeases: %v", err)
	}
	// Again: a renewal changes nothing but the expiries.
	if err := e.PutLeases(ctx, leases); err != nil {
		t.Fatalf("PutLeases again: %v", err)
	}
	all := members(t, e, "lease-app")
	if len(all) != 51 {
		t.Fatalf("app set after PutLeases: %d members, want 51", len(all))
	}
	for _, l := range leases[:50] {
		if got := members(t, e, "lease-user:"+l.Member); !slices.Equal(got, []string{l.Member}) {
			t.Fatalf("user set of %s: %v", l.Member, got)
		}
		if v, ttl, ok := getValue(t, e, l.Key); !ok || string(v) != l.Member || ttl <= 0 || ttl > time.Minute {
			t.Fatalf("lease value of %s: %q %v %v", l.Member, v, ttl, ok)
		}
	}
	time.Sleep(300*time.Millisecond + margin)
	if got := members(t, e, "lease-app"); len(got) != 50 || slices.Contains(got, "short") {
		t.Fatalf("after the short lease ran out: %d members (short still there: %v)", len(got), slices.Contains(got, "short"))
	}
	if err := e.PutLeases(ctx, []cluster.Lease{{Member: "x", Sets: []string{"s"}, TTL: 0}}); err == nil {
		t.Fatal("PutLeases with a zero ttl: no error")
	}
}
