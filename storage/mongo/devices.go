package mongo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

	"github.com/keyward/keyward/storage"
)

var (
	_ storage.DeviceStore = (*Store)(nil)
	_ storage.TokenStore  = (*Store)(nil)
)

// deviceDoc is a device as stored. Devices are never updated, so they carry no version.
type deviceDoc struct {
	ID     string `bson:"_id"`
	AppID  string `bson:"appId"`
	UserID string `bson:"userId"`
	// (UserID, HWID) carries the unique index, as stored; the *Lower copies exist only for
	// the case-insensitive search.
	Username      string    `bson:"username"`
	UsernameLower string    `bson:"usernameLower"`
	HWID          string    `bson:"hwid"`
	HWIDLower     string    `bson:"hwidLower"`
	PCName        string    `bson:"pcName"`
	IP            string    `bson:"ip"`
	CreatedAt     time.Time `bson:"createdAt,omitempty"`
	LastSeenAt    time.Time `bson:"lastSeenAt,omitempty"`
}

func (d deviceDoc) device() storage.Device {
	return storage.Device{
		ID:         d.ID,
		AppID:      d.AppID,
		UserID:     d.UserID,
		Username:   d.Username,
		HWID:       d.HWID,
		PCName:     d.PCName,
		IP:         d.IP,
		CreatedAt:  fromDate(d.CreatedAt),
		LastSeenAt: fromDate(d.LastSeenAt),
	}
}

// CreateDevice inserts d while the app has its user (ErrNotFound otherwise, see
// insertOwned); the unique _id and (userId, hwid) indexes answer ErrConflict.
func (s *Store) CreateDevice(ctx context.Context, d storage.Device) error {
	doc := deviceDoc{
		ID:            d.ID,
		AppID:         d.AppID,
		UserID:        d.UserID,
		Username:      d.Username,
		UsernameLower: strings.ToLower(d.Username),
		HWID:          d.HWID,
		HWIDLower:     strings.ToLower(d.HWID),
		PCName:        d.PCName,
		IP:            d.IP,
		CreatedAt:     storage.Truncate(d.CreatedAt),
		LastSeenAt:    storage.Truncate(d.LastSeenAt),
	}
	return s.insertOwned(ctx, "create device", s.devices, []any{doc}, bson.D{{Key: "_id", Value: d.ID}},
		[]parentRef{{what: "user " + d.UserID, coll: s.users, filter: byApp(d.AppID, d.UserID)}})
}

// CreateDeviceWithin is CreateDevice, when storage.RoomForDevice allows it on the user's
// devices' hwids (one read), under the lock of the user's device count
// (lockDoc: neither server can count and insert in one write, and FerretDB 1.x has no
// multi-document transaction), taken by every such insert for the user, so that the
// count it reads stays true until its insert is done. Deletes take no lock: they only
// lower the count.
func (s *Store) CreateDeviceWithin(ctx context.Context, d storage.Device, limit int, bound string) error {
	const op = "create device within limit"
	// Owned by the app: a lock left by a node that died goes with the app's deletion,
	// if no later insert cleared it as stale first.
	release, err := s.lockDoc(ctx, s.devices, "limit/"+d.AppID+"/"+d.UserID, d.AppID)
	if err != nil {
		return wrap(op, err)
	}
	defer release()
	hwids, err := distinctStrings(ctx, s.devices, "hwid", bson.D{{Key: "appId", Value: d.AppID}, {Key: "userId", Value: d.UserID}})
	if err != nil {
		return wrap(op+": read the user's devices", err)
	}
	if err := storage.RoomForDevice(hwids, d.HWID, limit, bound); err != nil {
		return fmt.Errorf("mongo: %s: %w", op, err)
	}
	return s.CreateDevice(ctx, d)
}

// ListDevices answers one page of the app's devices, newest first, and their total.
func (s *Store) ListDevices(ctx context.Context, appID string, q storage.DeviceQuery) ([]storage.Device, int, error) {
	filter := bson.D{{Key: "appId", Value: appID}}
	if q.UserID != "" {
		filter = append(filter, bson.E{Key: "userId", Value: q.UserID})
	}
	filter = searchAny(filter, q.Search, "hwidLower", "usernameLower")
	return listDocs(ctx, s.devices, "list devices", filter, sortBy("createdAt", true), q.Page, deviceDoc.device)
}

// DeleteDevice removes the app's device and answers it. It reads the device, then deletes
// it and trusts the delete's count, not FindOneAndDelete: FerretDB 1.x runs that as a read
// and a delete by _id, so two racing deletes would both answer the device (and both
// clear its user's hwid and report it). Devices are never updated, so the read is the
// device deleted.
func (s *Store) DeleteDevice(ctx context.Context, appID, id string) (storage.Device, error) {
	const op = "delete device"
	doc, err := findDoc[deviceDoc](ctx, s.devices, op, byApp(appID, id))
	if err != nil {
		return storage.Device{}, err
	}
	res, err := s.devices.DeleteOne(ctx, byApp(appID, id))
	if err != nil {
		return storage.Device{}, wrap(op, err)
	}
	if res.DeletedCount == 0 {
		return storage.Device{}, wrap(op, mongo.ErrNoDocuments) // another delete took it
	}
	return doc.device(), nil
}

// DeleteUserDevices removes every device of the app's user.
func (s *Store) DeleteUserDevices(ctx context.Context, appID, userID string) (int, error) {
	res, err := s.devices.DeleteMany(ctx, bson.D{{Key: "appId", Value: appID}, {Key: "userId", Value: userID}})
	if err != nil {
		return 0, wrap("delete user devices", err)
	}
	return int(res.DeletedCount), nil
}

// appTokenDoc is an application access token as stored; zero times are left out.
type appTokenDoc struct {
	ID      string `bson:"_id"`
	Version int64  `bson:"version"` // see versioned
	AppID   string `bson:"appId"`
	// (AppID, Value) carries the unique index, as stored.
	Value     string    `bson:"value"`
	Level     int       `bson:"level"`
	MaxUses   int       `bson:"maxUses"`
	UsedCount int       `bson:"usedCount"`
	ExpiresAt time.Time `bson:"expiresAt,omitempty"`
	Note      string    `bson:"note"`
	Enabled   bool      `bson:"enabled"`
	CreatedAt time.Time `bson:"createdAt,omitempty"`
	UpdatedAt time.Time `bson:"updatedAt,omitempty"`
}

func toAppTokenDoc(t storage.Token, version int64) appTokenDoc {
	return appTokenDoc{
		ID:        t.ID,
		Version:   version,
		AppID:     t.AppID,
		Value:     t.Value,
		Level:     t.Level,
		MaxUses:   t.MaxUses,
		UsedCount: t.UsedCount,
		ExpiresAt: storage.Truncate(t.ExpiresAt),
		Note:      t.Note,
		Enabled:   t.Enabled,
		CreatedAt: storage.Truncate(t.CreatedAt),
		UpdatedAt: storage.Truncate(t.UpdatedAt),
	}
}

func (d appTokenDoc) token() storage.Token {
	return storage.Token{
		ID:        d.ID,
		AppID:     d.AppID,
		Value:     d.Value,
		Level:     d.Level,
		MaxUses:   d.MaxUses,
		UsedCount: d.UsedCount,
		ExpiresAt: fromDate(d.ExpiresAt),
		Note:      d.Note,
		Enabled:   d.Enabled,
		CreatedAt: fromDate(d.CreatedAt),
		UpdatedAt: fromDate(d.UpdatedAt),
	}
}

// claimKey implements versioned: a token's claims belong to its app.
func (d appTokenDoc) claimKey() (string, int64, string) { return d.ID, d.Version, d.AppID }

// CreateTokens inserts every token with one InsertMany, all or none (see CreateLicenses).
func (s *Store) CreateTokens(ctx context.Context, ts []storage.Token) error {
	version := newVersion()
	docs := make([]any, len(ts))
	ids := make([]string, len(ts))
	apps := make([]string, len(ts))
	for i, t := range ts {
		docs[i], ids[i], apps[i] = toAppTokenDoc(t, version), t.ID, t.AppID
	}
	return s.insertOwned(ctx, "create tokens", s.tokens, docs, batchUndo(ids, version), s.appParents(apps))
}

// GetToken reads the app's token by id.
func (s *Store) GetToken(ctx context.Context, appID, id string) (storage.Token, error) {
	d, err := findDoc[appTokenDoc](ctx, s.tokens, "get token", byApp(appID, id))
	return d.token(), err
}

// GetTokenByValue finds the app's token with exactly this value.
func (s *Store) GetTokenByValue(ctx context.Context, appID, value string) (storage.Token, error) {
	d, err := findDoc[appTokenDoc](ctx, s.tokens, "get token by value",
		bson.D{{Key: "appId", Value: appID}, {Key: "value", Value: value}})
	return d.token(), err
}

// ListTokens answers one page of the app's tokens, newest first, and their total.
func (s *Store) ListTokens(ctx context.Context, appID string, p storage.Page) ([]storage.Token, int, error) {
	return listDocs(ctx, s.tokens, "list tokens", bson.D{{Key: "appId", Value: appID}}, sortBy("createdAt", true), p, appTokenDoc.token)
}

// UpdateToken applies fn to the app's token under a version claim (see updateDoc): of
// concurrent validations each counting a use, every one that succeeds wrote on top of the
// one before, so the count never passes MaxUses.
func (s *Store) UpdateToken(ctx context.Context, appID, id string, fn func(*storage.Token) error) (storage.Token, error) {
	d, err := updateDoc(ctx, s, s.tokens, "update token", byApp(appID, id),
		func(cur appTokenDoc) (appTokenDoc, error) {
			next := cur.token()
			if err := fn(&next); err != nil {
				return appTokenDoc{}, err
			}
			doc := toAppTokenDoc(next, cur.Version+1)
			doc.ID, doc.AppID, doc.CreatedAt = cur.ID, cur.AppID, cur.CreatedAt
			return doc, nil
		})
	if err != nil {
		return storage.Token{}, err
	}
	return d.token(), nil
}

// DeleteToken removes the app's token.
func (s *Store) DeleteToken(ctx context.Context, appID, id string) error {
	return deleteOne(ctx, s, s.tokens, "delete token", byApp(appID, id))
}
