package integrations

import (
	"context"
	"encoding/json"
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

// Handle queues e for every enabled integration of its app subscribed to it.
func (d *Dispatcher) Handle(e events.Event) {
	if e.AppID == "" {
		return
	}
	if strings.HasPrefix(e.Name, "integration.") {
		d.forget(e.AppID)
	}
	if !Subscribable(e.Name) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	list, err := d.subscriptions(ctx, e.AppID)
	if err != nil {
		d.log.Warn("webhooks: cannot read integrations; event not queued", "app", e.AppID, "event", e.Name, "err", err)
		return
	}
	var targets []storage.Integration
	for _, i := range list {
		if i.Enabled && slices.Contains(i.Events, e.Name) {
			targets = append(targets, i)
		}
	}
	if len(targets) == 0 {
		return
	}
	payload, err := json.Marshal(toWebhookEvent(e))
	if err != nil {
		d.log.Warn("webhooks: event cannot be encoded; not queued", "app", e.AppID, "event", e.Name, "err", err)
		return
	}
	var id struct{ ID string }
	_ = json.Unmarshal(payload, &id)
	now := storage.Truncate(d.now())
	ds := make([]storage.Delivery, 0, len(targets))
	for _, i := range targets {
		ds = append(ds, storage.Delivery{ID: uuid.NewString(), AppID: e.AppID, IntegrationID: i.ID, EventID: id.ID,
			Event: e.Name, Payload: payload, State: storage.DeliveryPending, NextAttemptAt: now, CreatedAt: now, UpdatedAt: now})
	}
	if err := d.store.CreateDeliveries(ctx, ds); err != nil {
		d.log.Warn("webhooks: cannot queue deliveries", "app", e.AppID, "event", e.Name, "err", err)
		return
	}
	if d.wake != nil {
		d.wake()
	}
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

// toWebhookEvent gives the event an id and folds the actor's username, address and
// country into its data, where receivers look for details.
func toWebhookEvent(e events.Event) webhooks.Event {
	data := make(map[string]any, len(e.Data)+3)
	maps.Copy(data, e.Data)
	for k, v := range map[string]string{"username": e.Username, "ipAddress": e.IP, "country": e.Country} {
		if _, taken := data[k]; !taken && v != "" {
			data[k] = v
		}
	}
	return webhooks.Event{ID: uuid.NewString(), Name: e.Name, AppID: e.AppID, Time: e.At, Data: data, Message: e.Message}
}
