// Package mongo is Keyward's storage engine for clusters, built on the official MongoDB Go
// driver (v2). It owns the collection layout, the indexes (created at Open) and the mapping
// of the storage contract onto MongoDB queries; it passes storage/storagetest unchanged.
//
// Collections: accounts (_id is the account id, with a version counter and lower-cased
// copies of username and email), accountTokens (_id is the token hash), apps, users,
// licenses, devices, tokens (application access tokens), variables, files, rules, logs,
// integrations, webhookDeliveries (the durable webhook delivery queue: pending deliveries
// only), webhookHistory (finished deliveries, see deliveries.go), webhookAttempts and
// wsHooks (WebSocket hooks), each _id being the record id, clientSessions (durable copies
// of client sessions, _id is the token hash), and claims (short-lived reservations used by
// every Update method). Records of an app carry its appId; updatable records carry a version;
// case-insensitive fields and searched fields have lower-cased copies (usernameLower,
// nameLower, keyLower, …). Field names are camelCase; times are BSON dates, which hold
// exactly the milliseconds the contract keeps, and zero times are left out of the document
// (so they sort as null, before every date) — except in log entries, webhookDeliveries,
// webhookHistory, webhookAttempts and clientSessions, which store every time (a zero one as the zero date,
// year 1) because their ranges, due checks, purges and expiry sweeps compare them.
//
// Every query is written to run on both real MongoDB and FerretDB 1.x (the MongoDB wire
// protocol over SQLite or PostgreSQL), which the tests use. FerretDB notes:
//   - No transactions. Deletions that span collections are several steps, parent first:
//     DeleteAccount removes the account, then its tokens; DeleteApp the app, then its
//     users, devices, licenses and tokens; DeleteUser the user, then its devices. A retry
//     of a delete that stopped part-way finishes the sweep. Creating a record that belongs
//     to another (an account token, a user, license or token of an app, a device of a user)
//     inserts it and then checks the parent, undoing the insert and answering ErrNotFound
//     if the parent is gone: either the check sees the parent gone, or the parent's sweep
//     runs after the insert and removes it (insertOwned). The parents of a batch are
//     checked with one $in count per collection, whatever the batch's size.
//   - Bulk inserts (CreateLicenses, CreateTokens, CreateUsers, CreateVariables, CreateRules)
//     are one ordered InsertMany, made all or
//     nothing by hand: when it fails, the documents of the batch that were written are
//     deleted again, found by their ids together with the version the whole batch was
//     created at, so that a pre-existing document under one of the ids is never touched.
//     FerretDB 1.24 needs this even for an ordered insert: after a failing document it goes
//     on with the next internal batch of documents. Until the undo, readers may see part
//     of the batch.
//   - Lists count and page in two reads (CountDocuments, then Find with sort, skip and
//     limit), so under concurrent writes a total may be off by the records written between.
//     Searches are $regex with regexp.QuoteMeta over the lower-cased copies: a literal,
//     case-insensitive substring. AppStats is one CountDocuments per figure.
//   - No collation: case-insensitive uniqueness relies on unique indexes over the
//     lower-cased copies (per account for app names, per app for usernames).
//   - Sparse and partial indexes are unreliable, so every unique index is on fields each
//     document has, and the API key and app secret hash indexes are not unique.
//   - Updates and findAndModify are a query followed by an unconditional write of the
//     whole document as read, so a filter on {_id, version} is not a compare-and-swap,
//     two updates of different fields of one document can lose one, a conditional delete
//     removes what matched at its read, and FindOneAndDelete can hand one document to two
//     callers. Only inserts into a unique index and the count a delete reports are
//     atomic. So every writer of a document other than its insert and delete holds a
//     claim on it, a claim document: Update methods (updateDoc) and RecordLogins the
//     claim of the record's next version ("<collection>/<id>#<version>"), partial updates
//     of unversioned documents (API keys, passkeys, owner sessions, the event log's
//     position hint) the document's lock (lockDoc); DeleteLicensesWhere deletes under the
//     next-version claims (deleteWhereClaimed), PurgeOwnerSessions under the sessions'
//     locks (deleteWhereLocked); ConsumeAccountToken and DeleteDevice
//     trust the delete count. All stay correct on MongoDB, where they cost a little more
//     than the native form. Versions start at a random value, so a record deleted and
//     created again under the same id never matches an old reader. ATOMICITY.md lists
//     every conditional write and why it is safe.
//   - Unique violations of an update come back as an InternalError quoting the backend's
//     constraint message, mapped to ErrConflict like the standard E11000.
//   - ClaimDeliveries cannot lease with one conditional update or findAndModify either: it
//     reads a few more due candidates than asked and claims each through updateDoc, whose
//     updater checks again that the delivery is still pending, due and not leased, so two
//     claimers (on two nodes) never both get one delivery. DeleteIntegration removes the
//     integration, then its deliveries and attempts; a delivery queued meanwhile is
//     removed by ClaimDeliveries (its integration is gone), an attempt by PurgeDeliveries.
//   - The count bound of the history (TrimDeliveries) cannot delete by a filter on
//     updatedAt: run as a read, then a delete by _id, it could take a copy a redelivery
//     and a new finish wrote meanwhile. It reads ids and versions, takes each one's next
//     version claim (as a redelivery does), checks the version under it and deletes by
//     exact _id in one BulkWrite. Attempts, never rewritten, are deleted by _id unclaimed.
//   - Upserts are a query then an insert or replace, so two concurrent upserts of one new
//     _id can both insert and one fails on the unique index: SaveClientSessions (a
//     BulkWrite of ReplaceOne upserts, whole-document and idempotent) writes its batch
//     again when that happens.
//   - One createIndexes command per index (FerretDB 1.24 fails on several that exist).
//   - No TTL indexes are relied on: expired tokens stay until consumed or deleted with
//     their account (a consume of an expired token answers ErrNotFound).
//
// A claim whose updater died before releasing it blocks updates of that record version
// for claimLease (30 s) and is then cleared; the lease assumes node clocks agree to well
// within that. Of several updaters finding the same stale claim, only the one that inserts
// its takeover document ("<claim id>~<claim time>") clears it (clearStaleClaim), so a
// slower one never deletes a fresh claim taken meanwhile. Claims carry an owner
// (the account, or the app of an app's record) and are swept with it, takeover documents
// too; a document's lock has none, and its takeover document goes as soon as the stale
// lock is deleted. Claims used to live
// in accountClaims under "<account id>#<version>"; nodes of that older build and of this
// one must not update the same accounts at once on FerretDB.
//
// Outages: calls made while the server is stopped or frozen fail within about a second
// with an error wrapping storage.ErrUnavailable: server selection gives up after 600 ms,
// and the driver's monitor (polling every 500 ms, each check bounded by the 250 ms connect
// timeout) marks a frozen server unknown after two missed checks and interrupts the
// operations in flight on it; reads are not retried, so an interrupted one answers at
// once. Operations themselves get no deadline (aggregations may run long on a healthy
// server). A URI that sets these options keeps its values. Open waits up to 5 s for the
// server.
package mongo
