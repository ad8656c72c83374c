// Package clusterproof proves the cluster with real processes: its tests build the
// `keyward` binary once and run three `keyward serve` processes over the MongoDB-wire test
// server (FerretDB) and Redis, then check through the public HTTP and WebSocket API alone
// what a cluster promises (SPEC 8 limits across nodes, socket admission, floating license
// seats under racing logins, deliveries between nodes, a killed node, a rolling restart),
// and that nodes over a Redis Sentinel group survive the loss of the master. It has no
// code outside its tests; it relies on no package of the server, so a rewrite of the
// server's insides leaves it standing.
package clusterproof
