// Package testenv tells tests where the real servers and tools started or found by
// deploy/testenv.sh (which `make test` runs) are: a Redis server, a MongoDB-wire server
// (FerretDB), optionally a Sentinel group and a Redis Cluster (rediscluster.go,
// sentinel.go), the FerretDB binary (ferretdb.go), and for the dashboard's browser tests
// Chromium (KEYWARD_TEST_CHROMIUM) and axe-core (KEYWARD_TEST_AXE). It also builds the
// keyward binary the process tests start once per run (binary.go) and collects a child's
// log (logbuffer.go). Under deploy/testenv.sh the variable KEYWARD_TEST_REQUIRE_SERVERS=1
// is set, and a missing server fails the test; in a plain `go test` run without the
// servers, tests that need them are skipped with a message.
package testenv

import (
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
)

// Environment variables set by deploy/testenv.sh.
const (
	EnvRedisURL       = "KEYWARD_TEST_REDIS_URL"
	EnvMongoURI       = "KEYWARD_TEST_MONGO_URI"
	EnvRequireServers = "KEYWARD_TEST_REQUIRE_SERVERS"
	// EnvSentinel=1 asks deploy/testenv.sh for a Sentinel group, whose URL it exports as
	// EnvSentinelURL.
	EnvSentinel    = "KEYWARD_TEST_SENTINEL"
	EnvSentinelURL = "KEYWARD_TEST_SENTINEL_URL"
	// EnvRedisCluster=1 asks deploy/testenv.sh for a Redis Cluster (three masters, three
	// replicas), whose URL it exports as EnvRedisClusterURL.
	EnvRedisCluster    = "KEYWARD_TEST_REDIS_CLUSTER"
	EnvRedisClusterURL = "KEYWARD_TEST_REDIS_CLUSTER_URL"
)

// RedisURL returns the test Redis server's URL (redis://host:port/0).
func RedisURL(t testing.TB) string { return need(t, EnvRedisURL, "Redis") }

// MongoURI returns the test MongoDB-wire server's URI, with connectTimeoutMS=2000 unless
// the URI sets it. Keyward's own default (250 ms, so that a frozen server is found within a
// second) also bounds the driver's monitor checks and connection handshakes; FerretDB on a
// loaded 2-core test machine sometimes takes longer than that, and the driver would then
// drop its pool and fail requests of a server that is only slow. The outage tests start
// their own FerretDB and keep the production defaults.
//
// It also sets minPoolSize=64 unless the URI sets it: a store opens with minPoolSize
// connections made at once (128 in production), each a handshake costing the test process
// and the shared FerretDB CPU under -race (about 0.9 CPU s per store open at 128), and the
// suite opens hundreds of stores. The pool still grows to its production maximum. Not
// fewer: the tests' bursts (50 logins at once in TestClientConcurrentLicenseLoginsOfOneDevice)
// must find a connection each, and at 16 the connections made during the burst of a
// heavily loaded machine waited past the checkout bound and answered 503.
func MongoURI(t testing.TB) string {
	return RelaxMongoURI(t, need(t, EnvMongoURI, "MongoDB-wire"))
}

// RelaxMongoURI answers uri with MongoURI's test settings (connectTimeoutMS=2000 and
// minPoolSize=64 unless uri sets them), for a server a test started itself
// (StartFerretDB) to load rather than to stop or freeze.
func RelaxMongoURI(t testing.TB, uri string) string {
	u, err := url.Parse(uri)
	if err != nil {
		t.Fatalf("MongoDB-wire URI %q: %v", uri, err)
	}
	q := u.Query()
	if !q.Has("connectTimeoutMS") {
		q.Set("connectTimeoutMS", "2000")
	}
	if !q.Has("minPoolSize") {
		q.Set("minPoolSize", "64")
	}
	u.RawQuery = q.Encode()
	return u.String()
}

// SentinelURL returns the URL of the test Sentinel group (master name kwtest), in the
// form KEYWARD_REDIS_URL takes. The group exists only when the tests run under
// KEYWARD_TEST_SENTINEL=1 (`make test` sets it); without it the test is skipped.
func SentinelURL(t testing.TB) string {
	t.Helper()
	return optionalServer(t, EnvSentinelURL, EnvSentinel, "the Sentinel group")
}

// RedisClusterURL returns the URL of the test Redis Cluster, in the form KEYWARD_REDIS_URL
// takes. The cluster exists only when the tests run under KEYWARD_TEST_REDIS_CLUSTER=1
// (`make test` sets it); without it the test is skipped.
func RedisClusterURL(t testing.TB) string {
	t.Helper()
	return optionalServer(t, EnvRedisClusterURL, EnvRedisCluster, "the Redis Cluster")
}

// optionalServer returns the URL in urlVar of a test server that deploy/testenv.sh starts
// only when switchVar is 1. Without it the test is skipped; with it, a missing URL (the
// server did not start) fails the test where the servers are required.
func optionalServer(t testing.TB, urlVar, switchVar, what string) string {
	t.Helper()
	if v := os.Getenv(urlVar); v != "" {
		return v
	}
	if os.Getenv(switchVar) == "1" && os.Getenv(EnvRequireServers) == "1" {
		t.Fatalf("%s is not set: %s did not start", urlVar, what)
	}
	t.Skipf("%s is not set: run the tests under `%s=1 deploy/testenv.sh` (as `make test` does)", urlVar, switchVar)
	return ""
}

func need(t testing.TB, env, what string) string {
	t.Helper()
	v := os.Getenv(env)
	if v != "" {
		return v
	}
	if os.Getenv(EnvRequireServers) == "1" {
		t.Fatalf("%s is not set: the %s test server did not start (run tests with `make test`)", env, what)
	}
	t.Skipf("%s is not set: run `make test` to start a real %s server", env, what)
	return ""
}

// UniqueName returns prefix followed by random hex, for per-test databases and key prefixes.
func UniqueName(prefix string) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return prefix + hex.EncodeToString(b)
}
