package mongo

import (
	"context"
	"errors"
	"fmt"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/keyward/keyward/storage"
)

// maxPortalCopies bounds the copy at Open: one portal connection per app was the rule,
// so this is far above any real count; what lies beyond it is left for the next start.
const maxPortalCopies = 10_000

// copyPortalSwitches moves the buyer portal's settings of each app that has a store
// connection of kind portal (where they lived before) to the app (App.Portal), unless
// the app has portal settings already: SQLite migration 34's copy for this engine. It
// runs at every Open and does nothing once every such app has its settings, so it needs
// no version marker; an app's settings changed since are never overwritten. The oldest
// connection of an app wins, as in the migration.
func (s *Store) copyPortalSwitches(ctx context.Context) error {
	// The doc is the connection as JSON with Go field names (newCommerceDoc): only
	// portal connections match.
	cur, err := s.storeConnections().Find(ctx, bson.D{{Key: "doc", Value: bson.D{{Key: "$regex", Value: `"Provider":"portal"`}}}},
		options.Find().SetSort(bson.D{{Key: "at", Value: 1}, {Key: "_id", Value: 1}}).SetLimit(maxPortalCopies))
	if err != nil {
		return fmt.Errorf("copy portal settings: %w", wrap("find portal connections", err))
	}
	var docs []commerceDoc
	if err := cur.All(ctx, &docs); err != nil {
		return fmt.Errorf("copy portal settings: %w", wrap("read portal connections", err))
	}
	done := map[string]bool{}
	for _, d := range docs {
		if done[d.AppID] {
			continue
		}
		done[d.AppID] = true
		c, err := decodeCommerce[storage.StoreConnection](d)
		if err != nil || c.Provider != "portal" {
			continue // not a portal connection after all (the pattern is a prefilter)
		}
		app, err := findDoc[appDoc](ctx, s.apps, "find app without portal settings",
			bson.D{{Key: "_id", Value: d.AppID}, {Key: "portal", Value: bson.D{{Key: "$exists", Value: false}}}})
		if errors.Is(err, storage.ErrNotFound) {
			continue // copied already, or the app is gone
		} else if err != nil {
			return fmt.Errorf("copy portal settings: %w", err)
		}
		_, err = s.UpdateApp(ctx, app.AccountID, app.ID, func(a *storage.App) error {
			a.Portal = storage.AppPortal{Enabled: c.Enabled, PortalSwitches: c.Portal}
			return nil
		})
		if err != nil && !errors.Is(err, storage.ErrNotFound) {
			return fmt.Errorf("copy portal settings: app %s: %w", app.ID, err)
		}
	}
	return nil
}
