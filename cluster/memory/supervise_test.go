package memory_test

import (
	"testing"
	"time"

	"github.com/keyward/keyward/cluster/clustertest"
	"github.com/keyward/keyward/cluster/memory"
	"github.com/keyward/keyward/internal/supervise"
)

// TestSubscriberPanicIsOwned: a subscriber's panic is the owner's to log and count, and
// the bus and the janitor go on (clustertest.SubscriberPanicIsOwned).
func TestSubscriberPanicIsOwned(t *testing.T) {
	owner, err := supervise.New(supervise.Config{MinBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	e := memory.New(memory.Config{Goroutines: owner, SweepInterval: time.Millisecond})
	clustertest.SubscriberPanicIsOwned(t, e, owner, "cluster-janitor")
}
