// Package storagetest is the conformance suite every storage engine must pass. It is the
// executable form of the contract written in package storage: each engine's own test file
// calls Run with a constructor for a fresh, empty store, and the same table of subtests
// runs unchanged against SQLite and against a MongoDB-wire server.
//
// The suite asserts behaviour callers rely on, never engine internals: sentinel errors
// (ErrNotFound, ErrConflict), exact round-tripping of every field (times included),
// case-insensitive lookups and uniqueness, list ordering and paging, and atomicity under
// concurrent updaters and token consumers. For the application records (apps, users,
// licenses, devices, tokens) it also holds engines to ownership (another account's app,
// another app's record is not found), all-or-nothing bulk inserts, the cascades of
// DeleteApp and DeleteUser, and list search, sorting, filtering and paging checked
// against the order computed in the test. A new store method gets its subtests here
// first, so both engines are held to the same behaviour.
package storagetest
