package integrations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/webhooks"
	"github.com/keyward/keyward/internal/supervise"
	"github.com/keyward/keyward/storage"
)

// Defaults of the worker.
const (
	DefaultPoll        = time.Second
	DefaultBatch       = 16
	DefaultConcurrency = 4
	// DefaultLease outlasts one attempt (webhooks.DefaultTimeout) with room for recording
	// it; a node that dies holding a delivery releases it when the lease ends.
	DefaultLease = time.Minute
	// MinLease is the shortest lease a node may be given (KEYWARD_WEBHOOK_LEASE): one
	// attempt with a few seconds to record it, or another node would send it again while
	// it is still being sent.
	MinLease = webhooks.DefaultTimeout + 5*time.Second
	// DefaultRetention is how long finished deliveries and attempts stay listable.
	DefaultRetention = 7 * 24 * time.Hour
	// DefaultMaxPerIntegration is how many finished deliveries (its newest, by last
	// update) and how many attempts an integration keeps within the retention: one busy
	// integration must not fill the disk with a week of history. Ten thousand is days of
	// history for most integrations and a few MB each.
	DefaultMaxPerIntegration = 10_000
	// DefaultTrimBatch bounds one delete of the count bound's sweep
	// (storage.DeliveryStore TrimDeliveries): on SQLite one short write transaction,
	// after which other writers get in; the worker claims due deliveries between batches.
	DefaultTrimBatch = 1_000
	purgeEvery       = time.Hour
	// moveRound bounds one round of moving an older version's finished deliveries out of
	// the queue (storage.DeliveryStore MoveFinishedDeliveries): the worker claims between
	// rounds, so an upgrade never holds up sending.
	moveRound = 500
)

// EventDisabled is the log event written when the queue disables an integration.
const EventDisabled = events.IntegrationDisabled

// WorkerConfig configures a Worker; zero members take the defaults.
type WorkerConfig struct {
	// Owner names this node in leases; a fresh id when empty.
	Owner string
	// Client sends the deliveries; it must come from webhooks.NewClient (the policy
	// check at dial time lives there).
	Client      *http.Client
	Poll        time.Duration
	Batch       int
	Concurrency int
	Lease       time.Duration
	Retention   time.Duration
	// MaxPerIntegration bounds the finished deliveries each integration keeps (its
	// newest by last update), and its attempts (its newest); the hourly sweep removes the
	// rest in batches of TrimBatch. Pending deliveries are never counted nor removed.
	MaxPerIntegration int
	TrimBatch         int
	Now               func() time.Time
	Log               *slog.Logger
	// Bus receives the log event of a disabled integration.
	Bus events.Publisher
}

// Worker sends due deliveries. Every node runs one (Run, on a goroutine its owner starts
// and stops: the node's supervisor); storage leases keep them from sending the same
// delivery at once.
type Worker struct {
	store Store
	cfg   WorkerConfig
	wake  chan struct{}

	mu  sync.Mutex
	rnd *rand.Rand
}

// NewWorker builds a worker; Run runs it.
func NewWorker(store Store, cfg WorkerConfig) *Worker {
	if cfg.Owner == "" {
		cfg.Owner = uuid.NewString()
	}
	if cfg.Client == nil {
		cfg.Client = webhooks.NewClient(webhooks.Config{})
	}
	if cfg.Poll <= 0 {
		cfg.Poll = DefaultPoll
	}
	if cfg.Batch <= 0 {
		cfg.Batch = DefaultBatch
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = DefaultConcurrency
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.Retention <= 0 {
		cfg.Retention = DefaultRetention
	}
	if cfg.MaxPerIntegration <= 0 {
		cfg.MaxPerIntegration = DefaultMaxPerIntegration
	}
	if cfg.TrimBatch <= 0 {
		cfg.TrimBatch = DefaultTrimBatch
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	return &Worker{store: store, cfg: cfg, wake: make(chan struct{}, 1),
		rnd: rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))}
}

// Wake makes the worker look for due deliveries now instead of at its next poll.
func (w *Worker) Wake() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// Run claims and sends due deliveries until ctx ends, then returns nil once the attempts
// in flight are done (they are bounded by the client's timeout; their outcome is
// recorded). A wake (Wake) or the poll interval starts the next round.
func (w *Worker) Run(ctx context.Context) error {
	ticker := time.NewTicker(w.cfg.Poll)
	defer ticker.Stop()
	lastPurge := time.Time{}
	moved := false // no finished delivery left in the queue by an older version
	// over holds what the last sweep found over the count bound and not yet trimmed: one
	// batch a turn, between the claims.
	var over []trimTarget
	for {
		for ctx.Err() == nil {
			n, err := w.RunOnce(ctx)
			if err != nil && ctx.Err() == nil {
				w.cfg.Log.Warn("webhooks: cannot claim deliveries", "err", err)
			}
			if n < w.cfg.Batch {
				break // the queue is drained for now
			}
		}
		if !moved && ctx.Err() == nil {
			var err error
			if moved, err = w.moveFinished(ctx); err != nil && ctx.Err() == nil {
				w.cfg.Log.Warn("webhooks: cannot move finished deliveries out of the queue", "err", err)
			} else if !moved {
				continue // another round, after the due deliveries
			}
		}
		if now := w.cfg.Now(); now.Sub(lastPurge) >= purgeEvery {
			lastPurge = now
			w.purge(ctx, now)
			over = w.overBound(ctx)
		}
		if len(over) > 0 && ctx.Err() == nil {
			over = w.trimRound(ctx, over)
			continue // the next batch, after the due deliveries
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		case <-w.wake:
		}
	}
}

// moveFinished moves one round of the finished deliveries an older version left in the
// queue to the history, and reports whether none are left.
func (w *Worker) moveFinished(ctx context.Context) (bool, error) {
	n, err := w.store.MoveFinishedDeliveries(ctx, moveRound)
	if n > 0 {
		w.cfg.Log.Info("webhooks: moved finished deliveries out of the queue", "count", n)
	}
	return err == nil && n < moveRound, err
}

func (w *Worker) purge(ctx context.Context, now time.Time) {
	n, err := w.store.PurgeDeliveries(ctx, now.Add(-w.cfg.Retention))
	if err != nil && ctx.Err() == nil {
		w.cfg.Log.Warn("webhooks: cannot purge old deliveries", "err", err)
	} else if n > 0 {
		w.cfg.Log.Debug("webhooks: purged old deliveries", "count", n)
	}
}

// trimTarget is an integration over the count bound: its finished deliveries, or its
// attempts.
type trimTarget struct {
	storage.IntegrationRef
	attempts bool
}

// what names the target's records in log lines.
func (t trimTarget) what() string {
	if t.attempts {
		return "delivery attempts"
	}
	return "finished deliveries"
}

// overBound answers the integrations whose history holds more than MaxPerIntegration
// finished deliveries, then those with more than MaxPerIntegration attempts; what cannot
// be read is left for the next sweep.
func (w *Worker) overBound(ctx context.Context) []trimTarget {
	var over []trimTarget
	for _, attempts := range []bool{false, true} {
		count := w.store.IntegrationsOverHistory
		if attempts {
			count = w.store.IntegrationsOverAttempts
		}
		refs, err := count(ctx, w.cfg.MaxPerIntegration)
		if err != nil && ctx.Err() == nil {
			w.cfg.Log.Warn("webhooks: cannot count "+trimTarget{attempts: attempts}.what()+" per integration", "err", err)
		}
		for _, ref := range refs {
			over = append(over, trimTarget{IntegrationRef: ref, attempts: attempts})
		}
	}
	return over
}

// trimRound removes one batch (TrimBatch) of the first target's records beyond
// MaxPerIntegration, and answers the targets left: the first goes once a batch comes back
// short (none beyond the bound is left) or fails (the next sweep tries again).
func (w *Worker) trimRound(ctx context.Context, over []trimTarget) []trimTarget {
	t := over[0]
	trim := w.store.TrimDeliveries
	if t.attempts {
		trim = w.store.TrimDeliveryAttempts
	}
	n, err := trim(ctx, t.AppID, t.IntegrationID, w.cfg.MaxPerIntegration, w.cfg.TrimBatch)
	if n > 0 {
		w.cfg.Log.Debug("webhooks: trimmed "+t.what()+" over the bound", "app", t.AppID, "integration", t.IntegrationID, "count", n)
	}
	if err != nil && ctx.Err() == nil {
		w.cfg.Log.Warn("webhooks: cannot trim "+t.what(), "app", t.AppID, "integration", t.IntegrationID, "err", err)
	}
	if err != nil || n < w.cfg.TrimBatch {
		return over[1:]
	}
	return over
}

// RunOnce claims one batch of due deliveries and sends them, answering how many it
// claimed. The loop calls it; tests call it to step the queue deterministically.
func (w *Worker) RunOnce(ctx context.Context) (int, error) {
	ds, err := w.store.ClaimDeliveries(ctx, w.cfg.Owner, storage.Truncate(w.cfg.Now()), w.cfg.Lease, w.cfg.Batch)
	if err != nil {
		return 0, fmt.Errorf("claim deliveries: %w", err)
	}
	// In-flight attempts finish even when the worker is stopped: cutting them would only
	// record a failure and send the event again later.
	sendCtx := context.WithoutCancel(ctx)
	// A panic in a send reaches the worker's owner (the node's supervisor) once every send
	// of the batch ended.
	sem := make(chan struct{}, w.cfg.Concurrency)
	var g supervise.Group
	for _, d := range ds {
		sem <- struct{}{}
		g.Go(func() {
			defer func() { <-sem }()
			w.send(sendCtx, d)
		})
	}
	g.Wait()
	return len(ds), nil
}

var errLeaseLost = errors.New("delivery lease lost")

// send makes one attempt of d and records its outcome.
func (w *Worker) send(ctx context.Context, d storage.Delivery) {
	log := w.cfg.Log.With("delivery", d.ID, "integration", d.IntegrationID, "event", d.Event)
	i, err := w.store.GetIntegration(ctx, d.AppID, d.IntegrationID)
	switch {
	case errors.Is(err, storage.ErrNotFound):
		w.finish(ctx, log, d, storage.DeliveryFailed, time.Time{}, "integration deleted", nil)
		return
	case err != nil:
		log.Warn("webhooks: cannot read integration; delivery waits for its lease to end", "err", err)
		return
	case !i.Enabled:
		w.finish(ctx, log, d, storage.DeliveryFailed, time.Time{}, "integration disabled", nil)
		return
	}

	var e webhooks.Event
	var a webhooks.Attempt
	if err := json.Unmarshal(d.Payload, &e); err != nil {
		a = webhooks.Attempt{Err: "stored event cannot be read"}
	} else if req, err := webhooks.BuildAt(i.Kind, i.URL, e, i.Secret, w.cfg.Now()); err != nil {
		a = webhooks.Attempt{Err: "request cannot be built: " + err.Error()}
	} else {
		a = webhooks.Deliver(ctx, w.cfg.Client, req)
	}
	n := d.Attempts + 1
	now := storage.Truncate(w.cfg.Now())
	if err := w.store.AddDeliveryAttempt(ctx, attemptRecord(i, d.ID, d.Event, n, a, now)); err != nil {
		log.Warn("webhooks: cannot record attempt", "err", err)
	}

	state, next := storage.DeliveryDelivered, time.Time{}
	if !a.OK() {
		w.mu.Lock()
		at, retry := webhooks.NextRetry(a, n, d.CreatedAt, now, w.rnd)
		w.mu.Unlock()
		state, next = storage.DeliveryFailed, time.Time{}
		if retry {
			state, next = storage.DeliveryPending, storage.Truncate(at)
		}
	}
	d.Attempts = n
	if !w.finish(ctx, log, d, state, next, a.Err, a.Sent.Encode()) {
		return
	}
	switch {
	case state == storage.DeliveryDelivered && i.ConsecutiveFailures > 0:
		w.updateIntegration(ctx, log, i, func(i *storage.Integration) error {
			i.ConsecutiveFailures = 0
			return nil
		})
	case state == storage.DeliveryFailed:
		w.countFailure(ctx, log, i, a.Err)
	}
}

// finish writes the delivery's new state if this worker still holds its lease. sent is
// the request the attempt put on the wire (webhooks.SentRequest's stored form); nil keeps
// the last one that did (an attempt refused before connecting sends nothing).
func (w *Worker) finish(ctx context.Context, log *slog.Logger, d storage.Delivery, state string, next time.Time, lastErr string, sent []byte) bool {
	_, err := w.store.UpdateDelivery(ctx, d.ID, func(cur *storage.Delivery) error {
		if cur.LeaseOwner != w.cfg.Owner || !cur.LeaseUntil.Equal(d.LeaseUntil) {
			return errLeaseLost
		}
		cur.State, cur.NextAttemptAt, cur.LastError = state, next, lastErr
		if sent != nil {
			cur.Sent = sent
		}
		cur.Attempts = max(cur.Attempts, d.Attempts)
		cur.LeaseOwner, cur.LeaseUntil = "", time.Time{}
		cur.UpdatedAt = storage.Truncate(w.cfg.Now())
		return nil
	})
	switch {
	case errors.Is(err, errLeaseLost):
		log.Warn("webhooks: lease ended before the attempt was recorded; another node owns the delivery")
		return false
	case errors.Is(err, storage.ErrNotFound):
		return false // the integration or its app was deleted meanwhile
	case err != nil:
		log.Warn("webhooks: cannot record delivery state; it is retried when its lease ends", "err", err)
		return false
	}
	return true
}

// countFailure counts a delivery that ended failed and disables the integration at
// webhooks.DisableAfter in a row.
func (w *Worker) countFailure(ctx context.Context, log *slog.Logger, i storage.Integration, lastErr string) {
	// The disable's event is stored with it (events.Change: in the update's SQLite
	// transaction; on MongoDB Commit appends it after the update).
	octx, ch := events.Begin(ctx, w.cfg.Bus)
	_, err := w.store.UpdateIntegration(octx, i.AppID, i.ID, func(cur *storage.Integration) error {
		ch.Set()
		cur.ConsecutiveFailures++
		if cur.Enabled && cur.ConsecutiveFailures >= webhooks.DisableAfter {
			cur.Enabled = false
			cur.DisabledReason = fmt.Sprintf("disabled after %d failed deliveries in a row; last error: %s",
				cur.ConsecutiveFailures, lastErr)
			cur.UpdatedAt = storage.Truncate(w.cfg.Now())
			ch.Set(events.Event{Name: EventDisabled, AppID: i.AppID, Level: events.LevelWarning,
				Message: fmt.Sprintf("integration %s was disabled: %s", i.Name, cur.DisabledReason),
				Data:    map[string]any{"integrationId": i.ID, "name": i.Name, "type": i.Kind}})
		}
		return nil
	})
	if err != nil {
		if !errors.Is(err, storage.ErrNotFound) {
			log.Warn("webhooks: cannot update integration failure count", "err", err)
		}
		return
	}
	if err := ch.Commit(ctx); err != nil {
		w.cfg.Log.Warn("webhooks: cannot log that an integration was disabled", "integration", i.ID, "err", err)
	}
}

func (w *Worker) updateIntegration(ctx context.Context, log *slog.Logger, i storage.Integration, fn func(*storage.Integration) error) storage.Integration {
	out, err := w.store.UpdateIntegration(ctx, i.AppID, i.ID, fn)
	if err != nil && !errors.Is(err, storage.ErrNotFound) {
		log.Warn("webhooks: cannot update integration failure count", "err", err)
	}
	return out
}
