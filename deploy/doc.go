// Package deploy holds the files that run Keyward outside `go run`: the Dockerfile, the
// compose file, the Kubernetes manifests, the Grafana dashboard, the Prometheus alert rules
// and the test environment script (README.md says which is which). It has no code; its
// tests check those files: the compose file against the vendored compose-spec schema, the
// manifests by strict decoding into the Kubernetes API types, the Dockerfile with
// BuildKit's linter (deploy/dockerlint), the settings, secret names and probe paths in all
// of them against what the server reads and serves, and the alert rules and dashboard
// queries with promtool and against the metric names a running node exports.
package deploy
