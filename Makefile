# Keyward developer tasks. `make test` runs the Go tests against throwaway
# Redis and FerretDB (MongoDB wire protocol) servers started by
# deploy/testenv.sh; see deploy/README.md.

VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)
# KEYWARD_TEST_SENTINEL=1: also a Redis Sentinel group, for the engine's tests on it;
# KEYWARD_TEST_REDIS_CLUSTER=1: also a Redis Cluster (three masters, three replicas).
TESTENV := KEYWARD_TEST_SENTINEL=1 KEYWARD_TEST_REDIS_CLUSTER=1 bash deploy/testenv.sh
# -race turns the compiler's checkptr instrumentation on in every package; it stays on for
# ours but is off for modernc.org's (the pure-Go SQLite, whose generated C-like code it
# checks at every pointer conversion): it halves the CPU of every SQLite test.
GOTEST  := go test -race -count=1 -timeout 20m -gcflags='modernc.org/...=-d=checkptr=0'

.PHONY: run build test test-v test-crowd sdk-check bench bench-client bench-sockets lint clean

run:
	go run ./cmd/keyward serve

build:
	go build -ldflags "-X main.version=$(VERSION)" -o bin/keyward ./cmd/keyward

# The slowest packages are named first: go test runs two test binaries at a time on two
# cores, in the order named, and one of them started last would run alone at the end.
SLOWEST := ./internal/clusterproof ./http ./cmd/keyward ./cluster/redis ./core/integrations ./storage/mongo ./web/e2e

test:
	go vet ./...
	$(TESTENV) $(GOTEST) $(SLOWEST) ./...

# The 500-socket admission test of internal/clusterproof alone (three keyward processes,
# 501 users, its own FerretDB; part of `make test` too), with its phases' times.
test-crowd:
	$(TESTENV) $(GOTEST) -v -run TestAppSocketLimitAcrossThreeNodes ./internal/clusterproof/

# Generates a TypeScript client from /api/openapi.json (openapi-typescript, openapi-fetch)
# and compiles a program using it with tsc --strict. Needs npm and its registry; about 30 s
# with a warm npm cache, so not part of `make test`.
sdk-check:
	KEYWARD_TEST_SDK=1 go test -count=1 -v -run TestGeneratedSDKCompiles ./http/

test-v:
	go vet ./...
	$(TESTENV) $(GOTEST) -v $(SLOWEST) ./...

bench:
	$(TESTENV) go test -run '^$$' -bench . -benchmem ./...

# Client API load figures on the embedded default (bounded runs, loopback only).
bench-client:
	go run ./cmd/keyward-load

# Socket figures: connect rate, CPU and memory of 10,000 idle client sockets (embedded
# default); what 500 idle sockets cost Redis and MongoDB (FerretDB) per minute; cross-node
# delivery p50/p99 over Redis with three keyward processes.
bench-sockets:
	go run ./cmd/keyward-load -idle-sockets 10000
	go build -o bin/keyward-load ./cmd/keyward-load
	bash deploy/testenv.sh sh -c 'bin/keyward-load -concurrency 2 -idle-sockets 500 -redis "$$KEYWARD_TEST_REDIS_URL" -mongo "$$KEYWARD_TEST_MONGO_URI" -periodic-window 60s'
	KEYWARD_TEST_DELIVERY_ROUNDS=200 bash deploy/testenv.sh go test -count=1 -v -run TestCrossNodeDeliveryFigure ./internal/clusterproof/

lint:
	@files=$$(gofmt -l .); if [ -n "$$files" ]; then echo "gofmt -l lists files that need gofmt -w:"; echo "$$files"; exit 1; fi
	go vet ./...

clean:
	rm -rf bin
