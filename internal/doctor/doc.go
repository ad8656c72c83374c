// Package doctor checks a node's installation the way `keyward doctor` reports it: the
// settings (the same loader as `keyward serve`), the data dir's modes, the secrets key and
// whether it opens the stored secrets, the storage engine's reachability and version, and,
// when configured, Redis's reachability, version and clock skew. Each check ends in one
// line: ok, warn or fail, with what to fix. It changes nothing it finds (it never creates a
// missing database or key: a fresh node makes those on its first start).
package doctor
