package integrations

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/core/apps"
	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/storage"
)

// errPeek aborts an UpdateDelivery whose updater only reads the record: the store has no
// read of one delivery, and an aborted update writes nothing.
var errPeek = errors.New("integrations: read only")

// Delivery answers one delivery of the integration: its payload, state and attempt count.
// Finished deliveries are purged after a while; a purged one is not found.
func (s *Service) Delivery(ctx context.Context, o apps.Owner, appID, id, deliveryID string) (storage.Delivery, error) {
	if _, err := s.Get(ctx, o, appID, id); err != nil {
		return storage.Delivery{}, err
	}
	var got storage.Delivery
	_, err := s.store.UpdateDelivery(ctx, deliveryID, func(d *storage.Delivery) error {
		got = *d
		return errPeek
	})
	switch {
	case errors.Is(err, errPeek) && got.AppID == appID && got.IntegrationID == id:
		return got, nil
	case err == nil, errors.Is(err, errPeek), errors.Is(err, storage.ErrNotFound):
		return storage.Delivery{}, core.E(core.CodeNotFound, "delivery not found (finished deliveries are removed after a while)")
	}
	return storage.Delivery{}, fmt.Errorf("integrations: read delivery: %w", err)
}

// Redeliver queues a delivery again, due now, with the integration's URL and secret of
// this moment. A delivery being attempted right now is refused (it is in flight).
func (s *Service) Redeliver(ctx context.Context, o apps.Owner, appID, id, deliveryID string) (storage.Delivery, error) {
	if _, err := s.Delivery(ctx, o, appID, id, deliveryID); err != nil {
		return storage.Delivery{}, err
	}
	now := storage.Truncate(s.now())
	// The redelivery's write is its change: its audit entry rides it (audit.Own).
	d, err := s.store.UpdateDelivery(audit.Own(ctx), deliveryID, audit.Track(ctx, func(d *storage.Delivery) error {
		if d.State == storage.DeliveryPending && d.LeaseUntil.After(now) {
			return core.E(core.CodeConflict, "this delivery is being attempted now")
		}
		d.State, d.NextAttemptAt, d.LeaseOwner, d.LeaseUntil, d.UpdatedAt = storage.DeliveryPending, now, "", time.Time{}, now
		return nil
	}))
	if err != nil {
		var de *core.Error
		if errors.As(err, &de) {
			return storage.Delivery{}, err
		}
		return storage.Delivery{}, fmt.Errorf("integrations: redeliver: %w", err)
	}
	return d, nil
}
