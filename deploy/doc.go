// Package deploy holds the files that run Keyward outside `go run`: the Dockerfile, the
// compose file, the Kubernetes manifests, the Grafana dashboard, the Prometheus alert rules and the test
// environment script (README.md says
// which is which). It has no code; its tests check those files: the compose file against
// the vendored compose-spec schema, the manifests by strict decoding into the Kubernetes API
// types, the Dockerfile with BuildKit's linter (deploy/dockerlint), and the settings, secret
// names and probe paths in all of them against what the server reads and serves; the alert
// rules and the dashboard's queries with promtool, and their metric names against a node's
// /metrics.
package deploy
