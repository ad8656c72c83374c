package clusterproof_test

import (
	"testing"

	"github.com/keyward/keyward/internal/testenv"
)

// TestThreeNodesOverRedisCluster runs three keyward processes over a Redis Cluster (three
// masters, three replicas; deploy/testenv.sh with KEYWARD_TEST_REDIS_CLUSTER=1, as `make
// test` runs) instead of one Redis server: the sockets, the bus between the nodes (kicks,
// bans, broadcasts, a pause) and every SPEC 8 HTTP limit hold as they do on one server.
func TestThreeNodesOverRedisCluster(t *testing.T) {
	url := testenv.RedisClusterURL(t)
	t.Run("OneSocketPerUser", func(t *testing.T) { oneSocketPerUser(t, url) })
	t.Run("KickBanBroadcast", func(t *testing.T) { kickBanBroadcast(t, url) })
	t.Run("PauseClosesSockets", func(t *testing.T) { pauseClosesSockets(t, url) })
	t.Run("HTTPLimits", func(t *testing.T) { httpLimits(t, url) })
}
