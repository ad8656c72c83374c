// Package server is Keyward's composition root: it reads the configuration (flags and
// KEYWARD_* environment variables), picks the storage and cluster engines in one place,
// wires the core services to the HTTP edge, and runs and stops the whole in order
// (HTTP → the supervised goroutines and stop steps, the last started first → cluster
// engine → storage). With no
// configuration at all it runs the embedded default: SQLite under ./data, the memory
// cluster engine, a JWT secret kept in the data dir and mail written to ./data/outbox.
//
// # Long-lived goroutines
//
// Every long-lived goroutine of a node has one owner, Core.Goroutines (internal/supervise).
// The packages give a Run(ctx) method, or take the owner as a supervise.Starter (the event
// log, the audit and client-session writers, the cluster engines) and fall back to a
// supervisor of their own without one (tests, admin commands). The supervisor runs each
// under a recover that logs the panic with its stack and counts it; a writer that panics
// answers what waited on it with an error first (a publish, an audit record, a login's
// session write), so no waiter hangs. Parts that stop by a call (the sockets, the app
// actors, the event log's close, the last usage flush, the mail's last try) are stop steps
// in the same order (supervise.OnStop). Close stops them one at a time, the last started
// first, each waited for (an error names any that did not stop within 30 s): the start
// order in goroutines.go is the shutdown order read backwards, with why.
//
//	kind                    body                          on a panic or an early error
//	cluster-janitor         the memory engine's sweep     restart
//	cluster-bus-fanout      the bus's subscriber calls    restart (messages taken with the panic are lost: at most once)
//	cluster-bus-receive     a Redis subscriber connection restart (one per connection)
//	mail                    mail.Queue.Run                restart (stops last of the rest: anything may queue a mail)
//	events-writer           the event log's group commit  restart (the round's publishers get ErrUnavailable)
//	events-notifier         "events stored" to the others restart
//	audit-writer            audit's group commit          restart (the group's callers get ErrNotStored)
//	usage-flusher           usage.Meter.Run               restart (a stop step makes the last flush)
//	webhooks-worker         integrations.Worker.Run       restart (attempts in flight finish first)
//	revocation-purge        accounts.Service.RunPurge     restart (revocations and owner sessions)
//	log-janitor             logs.Janitor.Run              restart
//	backups                 backup.Scheduler.Run          restart (backup.go: KEYWARD_BACKUP_*; idle without _EVERY)
//	client-writer           the client sessions' writes   restart (the round's callers get an error)
//	events-compaction       the event log's compaction    restart
//	events-notes            notes to the log writer       restart (notes.go: a crash loses the last 100 ms of notes)
//	events-consumer-NAME    one per consumer              restart from its cursor (logs, webhooks, sockets, app-actors)
//	http-api                the API listener              report, and Run ends: a listener cannot be served again
//	http-metrics            the metrics listener          report, and Run ends (only with --metrics-addr)
//
// A restart waits 100 ms, doubling up to 30 s. Metrics: keyward_goroutine_panics_total,
// keyward_goroutine_restarts_total and keyward_goroutines, each by kind.
// TestEveryGoroutineKindSurvivesAPanic makes each restarted kind panic once while the node
// serves, on the memory engine and on Redis; each package's own test makes its loop panic
// in a dependency and checks that the waiter gets an error. TestListenerPanicIsReported
// does the same to a listener. The short-lived goroutines of one call (a webhook batch's
// sends, parallel reads) run in a supervise.Group, which carries a panic to the call's owner.
//
// Not under it: the realtime wing's actors and socket goroutines (protoactor supervision
// and the transport's own recovers).
package server
