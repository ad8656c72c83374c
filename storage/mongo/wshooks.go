package mongo

import (
	"context"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/keyward/keyward/storage"
)

var _ storage.WSHookStore = (*Store)(nil)

// wsHookDoc is a WebSocket hook as stored; zero times are left out (omitempty). Conditions
// and actions are BSON binary, so they come back byte for byte whatever they hold; no
// bytes are stored as null and read back as nil, as in the SQLite engine.
type wsHookDoc struct {
	ID          string    `bson:"_id"`
	Version     int64     `bson:"version"` // see versioned
	AppID       string    `bson:"appId"`
	Name        string    `bson:"name"`
	Event       string    `bson:"event"`
	Description string    `bson:"description"`
	Conditions  []byte    `bson:"conditions"`
	Actions     []byte    `bson:"actions"`
	Enabled     bool      `bson:"enabled"`
	Priority    int       `bson:"priority"`
	CreatedAt   time.Time `bson:"createdAt,omitempty"`
	UpdatedAt   time.Time `bson:"updatedAt,omitempty"`
}

func toWSHookDoc(h storage.WSHook, version int64) wsHookDoc {
	return wsHookDoc{
		ID:          h.ID,
		Version:     version,
		AppID:       h.AppID,
		Name:        h.Name,
		Event:       h.Event,
		Description: h.Description,
		Conditions:  noneAsNil(h.Conditions),
		Actions:     noneAsNil(h.Actions),
		Enabled:     h.Enabled,
		Priority:    h.Priority,
		CreatedAt:   storage.Truncate(h.CreatedAt),
		UpdatedAt:   storage.Truncate(h.UpdatedAt),
	}
}

func (d wsHookDoc) wsHook() storage.WSHook {
	return storage.WSHook{
		ID:          d.ID,
		AppID:       d.AppID,
		Name:        d.Name,
		Event:       d.Event,
		Description: d.Description,
		Conditions:  noneAsNil(d.Conditions),
		Actions:     noneAsNil(d.Actions),
		Enabled:     d.Enabled,
		Priority:    d.Priority,
		CreatedAt:   fromDate(d.CreatedAt),
		UpdatedAt:   fromDate(d.UpdatedAt),
	}
}

// claimKey implements versioned: a hook's claims belong to its app.
func (d wsHookDoc) claimKey() (string, int64, string) { return d.ID, d.Version, d.AppID }

// CreateWSHook inserts h while its app exists (ErrNotFound otherwise, see insertOwned);
// the unique _id answers ErrConflict on a taken id.
func (s *Store) CreateWSHook(ctx context.Context, h storage.WSHook) error {
	return s.insertOwned(ctx, "create ws hook", s.wsHooks, []any{toWSHookDoc(h, newVersion())},
		bson.D{{Key: "_id", Value: h.ID}}, s.appParents([]string{h.AppID}))
}

// GetWSHook reads the app's hook by id.
func (s *Store) GetWSHook(ctx context.Context, appID, id string) (storage.WSHook, error) {
	d, err := findDoc[wsHookDoc](ctx, s.wsHooks, "get ws hook", byApp(appID, id))
	return d.wsHook(), err
}

// ListWSHooks answers every hook of the app by priority, then creation time, then id
// (the appId_priority_createdAt_id index). A zero creation time is left out of the
// document and sorts as null, before every date, as SQLite's 0 does.
func (s *Store) ListWSHooks(ctx context.Context, appID string) ([]storage.WSHook, error) {
	sort := bson.D{{Key: "priority", Value: 1}, {Key: "createdAt", Value: 1}, {Key: "_id", Value: 1}}
	return findAll(ctx, s.wsHooks, "list ws hooks", bson.D{{Key: "appId", Value: appID}}, sort, wsHookDoc.wsHook)
}

// CountWSHooks counts the app's hooks.
func (s *Store) CountWSHooks(ctx context.Context, appID string) (int, error) {
	return count(ctx, s.wsHooks, "count ws hooks", bson.D{{Key: "appId", Value: appID}})
}

// UpdateWSHook applies fn to the app's hook under a version claim (see updateDoc: FerretDB
// 1.x has neither transactions nor an atomic conditional update, so the claim document is
// what makes the read-modify-write atomic on both servers). The id, the app and the
// creation time are kept.
func (s *Store) UpdateWSHook(ctx context.Context, appID, id string, fn func(*storage.WSHook) error) (storage.WSHook, error) {
	d, err := updateDoc(ctx, s, s.wsHooks, "update ws hook", byApp(appID, id),
		func(cur wsHookDoc) (wsHookDoc, error) {
			next := cur.wsHook()
			if err := fn(&next); err != nil {
				return wsHookDoc{}, err
			}
			doc := toWSHookDoc(next, cur.Version+1)
			doc.ID, doc.AppID, doc.CreatedAt = cur.ID, cur.AppID, cur.CreatedAt
			return doc, nil
		})
	if err != nil {
		return storage.WSHook{}, err
	}
	return d.wsHook(), nil
}

// DeleteWSHook removes the app's hook.
func (s *Store) DeleteWSHook(ctx context.Context, appID, id string) error {
	return deleteOne(ctx, s, s.wsHooks, "delete ws hook", byApp(appID, id))
}
