package redis_test

import (
	"context"
	"testing"
	"time"

	"github.com/keyward/keyward/cluster/clustertest"
	kwredis "github.com/keyward/keyward/cluster/redis"
	"github.com/keyward/keyward/internal/supervise"
	"github.com/keyward/keyward/internal/testenv"
)

// TestSubscriberPanicIsOwned: a subscriber's panic is the owner's to log and count, and
// the bus goes on delivering from Redis (clustertest.SubscriberPanicIsOwned).
func TestSubscriberPanicIsOwned(t *testing.T) {
	url := testenv.RedisURL(t)
	owner, err := supervise.New(supervise.Config{MinBackoff: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	e, err := kwredis.New(ctx, kwredis.Config{URL: url, Prefix: testenv.UniqueName("kwtest:") + ":", Goroutines: owner})
	if err != nil {
		t.Fatal(err)
	}
	clustertest.SubscriberPanicIsOwned(t, e, owner, "cluster-bus-receive")
}
