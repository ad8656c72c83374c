// Package mongo is Keyward's storage engine for clusters, built on the official MongoDB Go
// driver (v2). It owns the collection layout, the indexes (created at Open) and the mapping
// of the storage contract onto MongoDB queries; it passes storage/storagetest unchanged.
//
// Collections: accounts (_id is the account id, with a version counter and lower-cased
// copies of username and email), accountTokens (_id is the token hash) and accountClaims
// (short-lived reservations used by UpdateAccount). Field names are camelCase; times are
// BSON dates, which hold exactly the milliseconds the contract keeps, and zero times are
// left out of the document.
//
// Every query is written to run on both real MongoDB and FerretDB 1.x (the MongoDB wire
// protocol over SQLite or PostgreSQL), which the tests use. FerretDB notes:
//   - No transactions: DeleteAccount removes the account, then its tokens, in two steps,
//     and ListAccounts counts and pages in two reads.
//   - No collation: case-insensitive uniqueness relies on unique indexes over
//     usernameLower and emailLower.
//   - Sparse and partial indexes are unreliable, so every unique index is on a field each
//     document has, and the API key hash index is not unique.
//   - Updates and findAndModify are a query followed by an unconditional write, so a
//     filter on {_id, version} is not a compare-and-swap and FindOneAndDelete can hand one
//     document to two callers. Only inserts into a unique index and the count a delete
//     reports are atomic. UpdateAccount therefore claims each version by inserting a claim
//     document, and ConsumeAccountToken trusts the delete count; both stay correct on
//     MongoDB, where they cost a little more than the native form.
//   - No TTL indexes are relied on: expired tokens stay until consumed or deleted with
//     their account (a consume of an expired token answers ErrNotFound).
//
// A claim whose updater died before releasing it blocks updates of that account version
// for claimLease (30 s) and is then cleared; the lease assumes node clocks agree to well
// within that. On FerretDB, two updaters clearing the same stale claim at the same instant
// could in theory both proceed; that needs a crashed updater first.
//
// Outages: server selection is bounded to a few seconds, so calls made while the server
// is unreachable fail fast with an error wrapping storage.ErrUnavailable, and Open fails
// the same way after a short ping.
package mongo
