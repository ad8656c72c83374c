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

var _ storage.UserStore = (*Store)(nil)

// userDoc is an application user as stored; zero times are left out (omitempty).
type userDoc struct {
	ID      string `bson:"_id"`
	Version int64  `bson:"version"` // see versioned
	AppID   string `bson:"appId"`
	// UsernameLower carries the per-app unique index; it and EmailLower are what the
	// search reads.
	Username          string    `bson:"username"`
	UsernameLower     string    `bson:"usernameLower"`
	PasswordHash      string    `bson:"passwordHash"`
	Email             string    `bson:"email"`
	EmailLower        string    `bson:"emailLower"`
	Level             int       `bson:"level"`
	ExpiresAt         time.Time `bson:"expiresAt,omitempty"`
	DeviceLimit       int       `bson:"deviceLimit"`
	Metadata          string    `bson:"metadata"`
	Enabled           bool      `bson:"enabled"`
	Banned            bool      `bson:"banned"`
	BanReason         string    `bson:"banReason"`
	HWID              string    `bson:"hwid"`
	DisplayName       string    `bson:"displayName"`
	PCName            string    `bson:"pcName"`
	LockedIP          string    `bson:"lockedIp"`
	LastLoginIP       string    `bson:"lastLoginIp"`
	HwidResetMax      int       `bson:"hwidResetMax"`
	HwidResetCooldown int       `bson:"hwidResetCooldown"`
	IPResetMax        int       `bson:"ipResetMax"`
	IPResetCooldown   int       `bson:"ipResetCooldown"`
	HwidResets        int       `bson:"hwidResets"`
	LastHwidResetAt   time.Time `bson:"lastHwidResetAt,omitempty"`
	IPResets          int       `bson:"ipResets"`
	LastIPResetAt     time.Time `bson:"lastIpResetAt,omitempty"`
	LicenseID         string    `bson:"licenseId"`
	DiscordID         string    `bson:"discordId"`
	LastLoginAt       time.Time `bson:"lastLoginAt,omitempty"`
	CreatedAt         time.Time `bson:"createdAt,omitempty"`
	UpdatedAt         time.Time `bson:"updatedAt,omitempty"`
}

func toUserDoc(u storage.AppUser, version int64) userDoc {
	return userDoc{
		ID:                u.ID,
		Version:           version,
		AppID:             u.AppID,
		Username:          u.Username,
		UsernameLower:     strings.ToLower(u.Username),
		PasswordHash:      u.PasswordHash,
		Email:             u.Email,
		EmailLower:        strings.ToLower(u.Email),
		Level:             u.Level,
		ExpiresAt:         storage.Truncate(u.ExpiresAt),
		DeviceLimit:       u.DeviceLimit,
		Metadata:          u.Metadata,
		Enabled:           u.Enabled,
		Banned:            u.Banned,
		BanReason:         u.BanReason,
		HWID:              u.HWID,
		DisplayName:       u.DisplayName,
		PCName:            u.PCName,
		LockedIP:          u.LockedIP,
		LastLoginIP:       u.LastLoginIP,
		HwidResetMax:      u.HwidResetMax,
		HwidResetCooldown: u.HwidResetCooldown,
		IPResetMax:        u.IPResetMax,
		IPResetCooldown:   u.IPResetCooldown,
		HwidResets:        u.HwidResets,
		LastHwidResetAt:   storage.Truncate(u.LastHwidResetAt),
		IPResets:          u.IPResets,
		LastIPResetAt:     storage.Truncate(u.LastIPResetAt),
		LicenseID:         u.LicenseID,
		DiscordID:         u.DiscordID,
		LastLoginAt:       storage.Truncate(u.LastLoginAt),
		CreatedAt:         storage.Truncate(u.CreatedAt),
		UpdatedAt:         storage.Truncate(u.UpdatedAt),
	}
}

func (d userDoc) user() storage.AppUser {
	return storage.AppUser{
		ID:                d.ID,
		AppID:             d.AppID,
		Username:          d.Username,
		PasswordHash:      d.PasswordHash,
		Email:             d.Email,
		Level:             d.Level,
		ExpiresAt:         fromDate(d.ExpiresAt),
		DeviceLimit:       d.DeviceLimit,
		Metadata:          d.Metadata,
		Enabled:           d.Enabled,
		Banned:            d.Banned,
		BanReason:         d.BanReason,
		HWID:              d.HWID,
		DisplayName:       d.DisplayName,
		PCName:            d.PCName,
		LockedIP:          d.LockedIP,
		LastLoginIP:       d.LastLoginIP,
		HwidResetMax:      d.HwidResetMax,
		HwidResetCooldown: d.HwidResetCooldown,
		IPResetMax:        d.IPResetMax,
		IPResetCooldown:   d.IPResetCooldown,
		HwidResets:        d.HwidResets,
		LastHwidResetAt:   fromDate(d.LastHwidResetAt),
		IPResets:          d.IPResets,
		LastIPResetAt:     fromDate(d.LastIPResetAt),
		LicenseID:         d.LicenseID,
		DiscordID:         d.DiscordID,
		LastLoginAt:       fromDate(d.LastLoginAt),
		CreatedAt:         fromDate(d.CreatedAt),
		UpdatedAt:         fromDate(d.UpdatedAt),
	}
}

// claimKey implements versioned: a user's claims belong to its app.
func (d userDoc) claimKey() (string, int64, string) { return d.ID, d.Version, d.AppID }

// CreateUser inserts u while its app exists (ErrNotFound otherwise, see insertOwned); the
// unique _id and (appId, usernameLower) indexes answer ErrConflict.
func (s *Store) CreateUser(ctx context.Context, u storage.AppUser) error {
	return s.insertOwned(ctx, "create user", s.users, []any{toUserDoc(u, newVersion())},
		bson.D{{Key: "_id", Value: u.ID}}, s.appParents([]string{u.AppID}))
}

// CreateUsers inserts every user with one InsertMany, all or none, while their apps exist
// (see insertOwned); a username taken in its app, or repeated in the batch, answers
// ErrConflict and what was inserted is deleted again.
func (s *Store) CreateUsers(ctx context.Context, us []storage.AppUser) error {
	version := newVersion()
	docs := make([]any, len(us))
	ids := make([]string, len(us))
	apps := make([]string, len(us))
	for i, u := range us {
		docs[i], ids[i], apps[i] = toUserDoc(u, version), u.ID, u.AppID
	}
	return s.insertOwned(ctx, "create users", s.users, docs, batchUndo(ids, version), s.appParents(apps))
}

// GetUser reads the app's user by id.
func (s *Store) GetUser(ctx context.Context, appID, id string) (storage.AppUser, error) {
	d, err := findDoc[userDoc](ctx, s.users, "get user", byApp(appID, id))
	return d.user(), err
}

// GetUserByUsername finds the app's user by username, ignoring case.
func (s *Store) GetUserByUsername(ctx context.Context, appID, username string) (storage.AppUser, error) {
	d, err := findDoc[userDoc](ctx, s.users, "get user by username",
		bson.D{{Key: "appId", Value: appID}, {Key: "usernameLower", Value: strings.ToLower(username)}})
	return d.user(), err
}

// userSortFields maps the sort keys onto fields. The username sort is on the lower-cased
// copy, as in the SQLite engine, so both order names the same way.
var userSortFields = map[string]string{
	"":                          "createdAt",
	storage.UserSortCreatedAt:   "createdAt",
	storage.UserSortUsername:    "usernameLower",
	storage.UserSortLastLoginAt: "lastLoginAt",
	storage.UserSortExpiresAt:   "expiresAt",
}

// ListUsers answers one page of the app's users matching q, and their total.
func (s *Store) ListUsers(ctx context.Context, appID string, q storage.UserQuery) ([]storage.AppUser, int, error) {
	field, ok := userSortFields[q.SortBy]
	if !ok {
		return nil, 0, fmt.Errorf("mongo: list users: unknown sort %q", q.SortBy)
	}
	filter := bson.D{{Key: "appId", Value: appID}}
	if q.Banned != nil {
		filter = append(filter, bson.E{Key: "banned", Value: *q.Banned})
	}
	// One expiresAt condition: a filter naming a field twice is not reliable.
	var expiry bson.D
	if q.Expired {
		expiry = append(expiry, bson.E{Key: "$lte", Value: q.Now})
	}
	if !q.ExpiredAfter.IsZero() {
		expiry = append(expiry, bson.E{Key: "$gt", Value: q.ExpiredAfter})
	}
	if expiry != nil {
		filter = append(filter, bson.E{Key: "expiresAt", Value: expiry})
	}
	filter = searchAny(filter, q.Search, "usernameLower", "emailLower")
	return listDocs(ctx, s.users, "list users", filter, sortBy(field, q.Desc), q.Page, userDoc.user)
}

// CountUsers counts the app's users.
func (s *Store) CountUsers(ctx context.Context, appID string) (int, error) {
	return count(ctx, s.users, "count users", bson.D{{Key: "appId", Value: appID}})
}

// UpdateUser applies fn to the app's user under a version claim (see updateDoc). The id,
// the app and the creation time are kept from the stored record.
func (s *Store) UpdateUser(ctx context.Context, appID, id string, fn func(*storage.AppUser) error) (storage.AppUser, error) {
	d, err := updateDoc(ctx, s, s.users, "update user", byApp(appID, id),
		func(cur userDoc) (userDoc, error) {
			next := cur.user()
			if err := fn(&next); err != nil {
				return userDoc{}, err
			}
			doc := toUserDoc(next, cur.Version+1)
			doc.ID, doc.AppID, doc.CreatedAt = cur.ID, cur.AppID, cur.CreatedAt
			return doc, nil
		})
	if err != nil {
		return storage.AppUser{}, err
	}
	return d.user(), nil
}

// DeleteUser removes the user, then its devices and its variables. The user goes first,
// so that a device or variable created meanwhile either sees its user gone or is swept
// (see insertOwned); the sweeps run even when the user was already gone, so that retrying
// a delete that stopped part-way finishes the job.
func (s *Store) DeleteUser(ctx context.Context, appID, id string) error {
	const op = "delete user"
	intent, err := s.stageDelete(ctx, s.users, byApp(appID, id))
	if err != nil {
		return wrap(op, err)
	}
	res, err := s.users.DeleteOne(ctx, byApp(appID, id))
	if err != nil {
		return wrap(op, err)
	}
	if res.DeletedCount == 0 {
		intent.abandon(ctx, s)
	} else {
		// The user is gone: the entry is confirmed, whatever the sweeps answer.
		defer intent.settle(ctx, s)
	}
	if _, err := s.devices.DeleteMany(ctx, bson.D{{Key: "appId", Value: appID}, {Key: "userId", Value: id}}); err != nil {
		return wrap(op+": devices", err)
	}
	if err := s.deleteOwnedVariables(ctx, appID, storage.ScopeUser, []string{id}); err != nil {
		return wrap(op+": variables", err)
	}
	if res.DeletedCount == 0 {
		return wrap(op, mongo.ErrNoDocuments)
	}
	return nil
}
