package accounts

import (
	"context"
	"fmt"

	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/storage"
)

// AppLister lists an account's apps: a plan change stores an event for each, because the
// client API's app snapshots carry the owner's plan (license variables, user limit).
type AppLister interface {
	ListApps(ctx context.Context, accountID string) ([]storage.App, error)
}

// planEvents is where a plan change's events go (SendPlanChanges); zero sends none.
type planEvents struct {
	pub  events.Publisher
	apps AppLister
}

// SendPlanChanges makes every plan change store an app.plan_change event for each app of
// the account, with the change (events.Change: on SQLite in the account update's
// transaction; on MongoDB in a write the answer waits for), so every node's app actors
// reload the snapshot from the event log. Call before serving.
func (s *Service) SendPlanChanges(pub events.Publisher, apps AppLister) {
	s.planEvents = planEvents{pub: pub, apps: apps}
}

// updatePlan is UpdateAccount for a change that sets the plan: the change's events
// (one per app of the account) are stored with it and Commit runs before the answer.
func (s *Service) updatePlan(ctx context.Context, id string, fn func(*storage.Account) error) (storage.Account, error) {
	if s.planEvents.pub == nil || s.planEvents.apps == nil {
		return s.store.UpdateAccount(ctx, id, fn)
	}
	// An app made after this list starts with a fresh snapshot: it needs no event.
	list, err := s.planEvents.apps.ListApps(ctx, id)
	if err != nil {
		return storage.Account{}, fmt.Errorf("accounts: list the apps of the account whose plan changes: %w", err)
	}
	octx, ch := events.Begin(ctx, s.planEvents.pub)
	for _, a := range list {
		ch.Add(events.Event{Name: events.AppPlanChange, AppID: a.ID, Message: "owner's plan changed"})
	}
	a, err := s.store.UpdateAccount(octx, id, fn)
	if err != nil {
		return storage.Account{}, err
	}
	if err := ch.Commit(ctx); err != nil {
		return storage.Account{}, fmt.Errorf("accounts: store the plan change's events: %w", err)
	}
	return a, nil
}
