// Package server is Keyward's composition root: it reads the configuration (flags and
// KEYWARD_* environment variables), picks the storage and cluster engines in one place,
// wires the core services to the HTTP edge, and runs and stops the whole in order
// (HTTP → sockets → supervised goroutines → cluster engine → storage). With no
// configuration at all it runs the embedded default: SQLite under ./data, the memory
// cluster engine, a JWT secret kept in the data dir and mail written to ./data/outbox.
//
// # Long-lived goroutines
//
// Every long-lived goroutine of a node that this package starts has one owner,
// Core.Goroutines (internal/supervise). The packages give a Run(ctx) method, and no
// constructor of theirs starts a goroutine; the supervisor runs each under a recover that
// logs the panic with its stack and counts it, and stops them one at a time, the last
// started first, each waited for (Stop answers an error naming any that did not stop within
// the shutdown's 10 s instead of hanging). The kinds, in start order (goroutines.go):
//
//	kind              body                         on a panic or an early error
//	mail              mail.Queue.Run               restart (it stops last: anything may queue a mail)
//	usage-flusher     usage.Meter.Run              restart (Close then makes the last flush)
//	webhooks-worker   integrations.Worker.Run      restart (attempts in flight finish first)
//	revocation-purge  revocationPurge              restart
//	log-janitor       logs.Janitor.Run             restart
//	backups           backup.Scheduler.Run         restart (backup.go: KEYWARD_BACKUP_*; idle without _EVERY)
//	http-api          the API listener             report, and Run ends: a listener cannot be served again
//	http-metrics      the metrics listener         report, and Run ends (only with --metrics-addr)
//
// A restart waits 100 ms, doubling up to 30 s. Metrics: keyward_goroutine_panics_total,
// keyward_goroutine_restarts_total and keyward_goroutines, each by kind.
// TestEveryGoroutineKindSurvivesAPanic makes each restarted kind panic once while the node
// serves; TestListenerPanicIsReported does the same to a listener.
//
// Not yet under it: the goroutines other packages start for themselves (the event bus and
// the log writer, the realtime wing's actors and bus subscribers, the client sessions'
// writer, the cluster engines' janitor and bus loops).
package server
