package apps

import (
	"context"
	"errors"

	"github.com/keyward/keyward/core"
	"github.com/keyward/keyward/storage"
)

// WebSocketApp answers the owner's app for the WebSocket channels and helpers (SPEC 4.9,
// 4.11): PLAN_FEATURE when the owner's plan has no WebSocket access, NOT_FOUND when the app
// is not the owner's.
func (s *Service) WebSocketApp(ctx context.Context, o Owner, appID string) (storage.App, error) {
	if !s.plans.MustGet(o.Plan).Limits.WebSocketAccess {
		return storage.App{}, core.E(core.CodePlanFeature, "WebSocket features need the Business plan")
	}
	return s.app(ctx, o, appID)
}

// BanAsOwner bans a user of an app on its owner's behalf (a WebSocket hook's ban action,
// which runs without a signed-in owner), as UpdateUser with banned=true would.
func (s *Service) BanAsOwner(ctx context.Context, appID, userID, reason string) error {
	a, err := s.store.GetAppByID(ctx, appID)
	if errors.Is(err, storage.ErrNotFound) {
		return errAppNotFound
	}
	if err != nil {
		return err
	}
	// Ownership is all UpdateUser checks of the owner; banning needs no plan feature.
	banned := true
	_, err = s.UpdateUser(ctx, Owner{AccountID: a.AccountID}, appID, userID, UpdateUserInput{Banned: &banned, BanReason: &reason})
	return err
}
