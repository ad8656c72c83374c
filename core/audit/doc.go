// Package audit owns the audit log (issue 14): the changes owners and administrators make
// through the Dashboard and admin APIs, who made them (session, account key or scoped key),
// from where, on what record, and for updates the changed members before and after.
//
// Entries are written off the request path: Record queues an entry (blocking only when
// the queue is full, never dropping) and one goroutine writes batches, at most every
// FlushEvery or BatchSize entries. Close writes everything queued before it returns, so a
// graceful stop (the HTTP server shut down first) loses nothing. The same goroutine
// deletes entries older than the retention (default 90 days) once an hour.
//
// What is recorded, and the redaction of secrets, is the http edge's business (it knows
// routes and bodies); this package stores and lists.
package audit
