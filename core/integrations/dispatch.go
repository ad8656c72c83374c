package integrations

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"

	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/webhooks"
	"github.com/keyward/keyward/storage"
)

// subscriptionTTL is how long the dispatcher trusts its cached list of an app's
// integrations. Changes made on this node apply at once (the integration.* events clear
// the entry); changes made on another node of a cluster apply within this time.
const subscriptionTTL = 5 * time.Second

// Dispatcher turns application events into queued deliveries. Handle runs on the event
// bus's subscriber goroutine.
type Dispatcher struct {
	store Store
	wake  func()
	log   *slog.Logger
	now   func() time.Time

	mu    sync.Mutex
	cache map[string]cachedSubscriptions
}

type cachedSubscriptions struct {
	list    []storage.Integration
	fetched time.Time
}

// NewDispatcher builds a dispatcher; wake (may be nil) is called after deliveries were
// queued, so the local worker sends them without waiting for its next poll.
func NewDispatcher(store Store, wake func(), log *slog.Logger, now func() time.Time) *Dispatcher {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.Default()
	}
	return &Dispatcher{store: store, wake: wake, log: log, now: now, cache: map[string]cachedSubscriptions{}}
}

// Handle queues e for every enabled integration of its app subscribed to it (HandleBatch
// of one event; a failure is logged).
func (d *Dispatcher) Handle(e events.Event) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := d.HandleBatch(ctx, []events.Event{e}); err != nil {
		d.log.Warn("webhooks: cannot queue deliveries", "app", e.AppID, "event", e.Name, "err", err)
	}
}

// HandleBatch queues each event for every enabled integration of its app subscribed to
// it. It is the webhooks consumer of the event log: an error makes the log hand the same
// events again, and a delivery's id is made from the event's and the integration's, so an
// event handled twice queues each delivery once.
func (d *Dispatcher) HandleBatch(ctx context.Context, evs []events.Event) error {
	var ds []storage.Delivery
	for _, e := range evs {
		if e.AppID == "" {
			continue
		}
		if strings.HasPrefix(string(e.Name), "integration.") {
			d.forget(e.AppID)
		}
		if !Subscribable(e.Name) {
			continue
		}
		list, err := d.subscriptions(ctx, e.AppID)
		if err != nil {
			return fmt.Errorf("webhooks: read the integrations of app %s: %w", e.AppID, err)
		}
		var targets []storage.Integration
		for _, i := range list {
			if i.Enabled && slices.Contains(i.Events, string(e.Name)) {
				targets = append(targets, i)
			}
		}
		if len(targets) == 0 {
			continue
		}
		we := toWebhookEvent(e)
		payload, err := json.Marshal(we)
		if err != nil {
			d.log.Warn("webhooks: event cannot be encoded; not queued", "app", e.AppID, "event", e.Name, "err", err)
			continue
		}
		now := storage.Truncate(d.now())
		for _, i := range targets {
			ds = append(ds, storage.Delivery{ID: DeliveryID(we.ID, i.ID), AppID: e.AppID, IntegrationID: i.ID, EventID: we.ID,
				Event: string(e.Name), Payload: payload, State: storage.DeliveryPending, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now})
		}
	}
	if len(ds) == 0 {
		return nil
	}
	if err := d.store.CreateDeliveries(ctx, ds); errors.Is(err, storage.ErrConflict) {
		// Some were queued before (the events are handed again after a crash): queue the
		// others one by one.
		for _, del := range ds {
			if err := d.store.CreateDeliveries(ctx, []storage.Delivery{del}); err != nil && !errors.Is(err, storage.ErrConflict) {
				return fmt.Errorf("webhooks: queue deliveries: %w", err)
			}
		}
	} else if err != nil {
		return fmt.Errorf("webhooks: queue deliveries: %w", err)
	}
	if d.wake != nil {
		d.wake()
	}
	return nil
}

// DeliveryID is the id of the delivery of an event to an integration: the same for the
// same pair, so that queuing an event again never sends it twice.
func DeliveryID(eventID, integrationID string) string {
	ns, err := uuid.Parse(eventID)
	if err != nil {
		ns = uuid.NewSHA1(uuid.NameSpaceOID, []byte(eventID))
	}
	return uuid.NewSHA1(ns, []byte(integrationID)).String()
}

func (d *Dispatcher) subscriptions(ctx context.Context, appID string) ([]storage.Integration, error) {
	d.mu.Lock()
	c, ok := d.cache[appID]
	d.mu.Unlock()
	if ok && d.now().Sub(c.fetched) < subscriptionTTL {
		return c.list, nil
	}
	list, err := d.store.ListIntegrations(ctx, appID)
	if err != nil {
		return nil, err
	}
	d.mu.Lock()
	// Apps come and go; an entry per app ever seen would grow without bound.
	if len(d.cache) > 10_000 {
		clear(d.cache)
	}
	d.cache[appID] = cachedSubscriptions{list: list, fetched: d.now()}
	d.mu.Unlock()
	return list, nil
}

func (d *Dispatcher) forget(appID string) {
	d.mu.Lock()
	delete(d.cache, appID)
	d.mu.Unlock()
}

// toWebhookEvent carries the event's id (the receiver's key to drop a repeated delivery)
// and folds the actor's username, address and
// country into its data, where receivers look for details.
func toWebhookEvent(e events.Event) webhooks.Event {
	data := make(map[string]any, len(e.Data)+3)
	maps.Copy(data, e.Data)
	for k, v := range map[string]string{"username": e.Username, "ipAddress": e.IP, "country": e.Country} {
		if _, taken := data[k]; !taken && v != "" {
			data[k] = v
		}
	}
	id := e.ID
	if id == "" {
		id = uuid.NewString()
	}
	return webhooks.Event{ID: id, Name: string(e.Name), AppID: e.AppID, Time: e.At, Data: data, Message: e.Message}
}
