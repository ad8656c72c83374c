// Package dashboard is the DashboardActor: an owner's socket on an app (SPEC 4.11,
// dashboard to server), run by its actor, a child of its app's actor (actors/app).
// Dashboard owns the socket's event filters, its limiter of 30 messages per 10 s
// (core/realtime.Window), the deliveries held until its first messages (online_count and
// sessions, Greet) are sent, the owner's token recheck on its timer (WithRecheck: a token
// that no longer authenticates closes the socket) and what it audits (WithAudit: each
// action that changed something, once it succeeded; a ban's entry rides the ban's own
// write when the Auditor is a ChangeAuditor, built in the job's Work). Its actor handles a frame (Hand;
// app.Turn keeps the order), a delivery (Delivery), the greeting, the recheck's timer
// and answer, its leaving, one at a time; an action that needs the cluster is a typed
// job (jobs.go) that Work does off the actor.
//
// The actions are the operations of SPEC 4.9 that the REST helpers share, asked of the
// node through Node (actors/sockets implements it); Refusal says what a socket that could
// not be opened is told.
package dashboard
