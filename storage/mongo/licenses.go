package mongo

import (
	"context"
	"fmt"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"

	"github.com/keyward/keyward/storage"
)

var _ storage.LicenseStore = (*Store)(nil)

// licenseDoc is a license as stored; zero times are left out (omitempty).
type licenseDoc struct {
	ID      string `bson:"_id"`
	Version int64  `bson:"version"` // see versioned
	AppID   string `bson:"appId"`
	// Key carries the per-app unique index, as stored. The *Lower copies exist only for
	// the case-insensitive search.
	Key         string    `bson:"key"`
	KeyLower    string    `bson:"keyLower"`
	Level       int       `bson:"level"`
	MaxUses     int       `bson:"maxUses"`
	UsedCount   int       `bson:"usedCount"`
	Duration    int64     `bson:"duration"`
	ExpiresAt   time.Time `bson:"expiresAt,omitempty"`
	Note        string    `bson:"note"`
	NoteLower   string    `bson:"noteLower"`
	UsedBy      string    `bson:"usedBy"`
	UsedByLower string    `bson:"usedByLower"`
	DeviceLimit int       `bson:"deviceLimit"`
	DisplayName string    `bson:"displayName"`
	Enabled     bool      `bson:"enabled"`
	Banned      bool      `bson:"banned"`
	DiscordID   string    `bson:"discordId"`
	ActivatedAt time.Time `bson:"activatedAt,omitempty"`
	CreatedAt   time.Time `bson:"createdAt,omitempty"`
	UpdatedAt   time.Time `bson:"updatedAt,omitempty"`
}

func toLicenseDoc(l storage.License, version int64) licenseDoc {
	return licenseDoc{
		ID:          l.ID,
		Version:     version,
		AppID:       l.AppID,
		Key:         l.Key,
		KeyLower:    strings.ToLower(l.Key),
		Level:       l.Level,
		MaxUses:     l.MaxUses,
		UsedCount:   l.UsedCount,
		Duration:    l.Duration,
		ExpiresAt:   storage.Truncate(l.ExpiresAt),
		Note:        l.Note,
		NoteLower:   strings.ToLower(l.Note),
		UsedBy:      l.UsedBy,
		UsedByLower: strings.ToLower(l.UsedBy),
		DeviceLimit: l.DeviceLimit,
		DisplayName: l.DisplayName,
		Enabled:     l.Enabled,
		Banned:      l.Banned,
		DiscordID:   l.DiscordID,
		ActivatedAt: storage.Truncate(l.ActivatedAt),
		CreatedAt:   storage.Truncate(l.CreatedAt),
		UpdatedAt:   storage.Truncate(l.UpdatedAt),
	}
}

func (d licenseDoc) license() storage.License {
	return storage.License{
		ID:          d.ID,
		AppID:       d.AppID,
		Key:         d.Key,
		Level:       d.Level,
		MaxUses:     d.MaxUses,
		UsedCount:   d.UsedCount,
		Duration:    d.Duration,
		ExpiresAt:   fromDate(d.ExpiresAt),
		Note:        d.Note,
		UsedBy:      d.UsedBy,
		DeviceLimit: d.DeviceLimit,
		DisplayName: d.DisplayName,
		Enabled:     d.Enabled,
		Banned:      d.Banned,
		DiscordID:   d.DiscordID,
		ActivatedAt: fromDate(d.ActivatedAt),
		CreatedAt:   fromDate(d.CreatedAt),
		UpdatedAt:   fromDate(d.UpdatedAt),
	}
}

// claimKey implements versioned: a license's claims belong to its app.
func (d licenseDoc) claimKey() (string, int64, string) { return d.ID, d.Version, d.AppID }

// CreateLicenses inserts every license with one InsertMany, all or none (see insertOwned:
// there are no transactions on FerretDB, so when a taken key or id aborts the batch, what
// was inserted is deleted again before ErrConflict is answered). All the licenses of one
// call share their initial version, which is what lets the undo tell them apart.
func (s *Store) CreateLicenses(ctx context.Context, ls []storage.License) error {
	version := newVersion()
	docs := make([]any, len(ls))
	ids := make([]string, len(ls))
	apps := make([]string, len(ls))
	for i, l := range ls {
		docs[i], ids[i], apps[i] = toLicenseDoc(l, version), l.ID, l.AppID
	}
	return s.insertOwned(ctx, "create licenses", s.licenses, docs, batchUndo(ids, version), s.appParents(apps))
}

// GetLicense reads the app's license by id.
func (s *Store) GetLicense(ctx context.Context, appID, id string) (storage.License, error) {
	d, err := findDoc[licenseDoc](ctx, s.licenses, "get license", byApp(appID, id))
	return d.license(), err
}

// GetLicenseByKey finds the app's license with exactly this key.
func (s *Store) GetLicenseByKey(ctx context.Context, appID, key string) (storage.License, error) {
	d, err := findDoc[licenseDoc](ctx, s.licenses, "get license by key",
		bson.D{{Key: "appId", Value: appID}, {Key: "key", Value: key}})
	return d.license(), err
}

var licenseSortFields = map[string]string{
	"":                           "createdAt",
	storage.LicenseSortCreatedAt: "createdAt",
	storage.LicenseSortKey:       "key",
	storage.LicenseSortExpiresAt: "expiresAt",
	storage.LicenseSortUsedCount: "usedCount",
}

// ListLicenses answers one page of the app's licenses matching q, and their total.
func (s *Store) ListLicenses(ctx context.Context, appID string, q storage.LicenseQuery) ([]storage.License, int, error) {
	field, ok := licenseSortFields[q.SortBy]
	if !ok {
		return nil, 0, fmt.Errorf("mongo: list licenses: unknown sort %q", q.SortBy)
	}
	filter := bson.D{{Key: "appId", Value: appID}}
	if q.Used != nil {
		if *q.Used {
			filter = append(filter, bson.E{Key: "usedCount", Value: bson.D{{Key: "$gt", Value: 0}}})
		} else {
			filter = append(filter, bson.E{Key: "usedCount", Value: 0})
		}
	}
	if q.Banned != nil {
		filter = append(filter, bson.E{Key: "banned", Value: *q.Banned})
	}
	if q.Expired {
		filter = append(filter, expiredBy("expiresAt", q.Now))
	}
	filter = searchAny(filter, q.Search, "keyLower", "usedByLower", "noteLower")
	return listDocs(ctx, s.licenses, "list licenses", filter, sortBy(field, q.Desc), q.Page, licenseDoc.license)
}

// CountLicenses counts the app's licenses.
func (s *Store) CountLicenses(ctx context.Context, appID string) (int, error) {
	return count(ctx, s.licenses, "count licenses", bson.D{{Key: "appId", Value: appID}})
}

// UpdateLicense applies fn to the app's license under a version claim (see updateDoc). The
// id, the app and the creation time are kept from the stored record.
func (s *Store) UpdateLicense(ctx context.Context, appID, id string, fn func(*storage.License) error) (storage.License, error) {
	d, err := updateDoc(ctx, s, s.licenses, "update license", byApp(appID, id),
		func(cur licenseDoc) (licenseDoc, error) {
			next := cur.license()
			if err := fn(&next); err != nil {
				return licenseDoc{}, err
			}
			doc := toLicenseDoc(next, cur.Version+1)
			doc.ID, doc.AppID, doc.CreatedAt = cur.ID, cur.AppID, cur.CreatedAt
			return doc, nil
		})
	if err != nil {
		return storage.License{}, err
	}
	return d.license(), nil
}

// DeleteLicense removes the app's license.
func (s *Store) DeleteLicense(ctx context.Context, appID, id string) error {
	return deleteOne(ctx, s.licenses, "delete license", byApp(appID, id))
}

// DeleteLicenses removes the app's licenses with these ids; the delete count is exact on
// both servers.
func (s *Store) DeleteLicenses(ctx context.Context, appID string, ids []string) (int, error) {
	if len(ids) == 0 {
		return 0, nil
	}
	res, err := s.licenses.DeleteMany(ctx, bson.D{{Key: "appId", Value: appID}, {Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
	if err != nil {
		return 0, wrap("delete licenses", err)
	}
	return int(res.DeletedCount), nil
}

// DeleteLicensesWhere removes the app's licenses matching a LicenseFilter*.
func (s *Store) DeleteLicensesWhere(ctx context.Context, appID, filter string, now time.Time) (int, error) {
	f := bson.D{{Key: "appId", Value: appID}}
	switch filter {
	case storage.LicenseFilterUsed:
		f = append(f, bson.E{Key: "usedCount", Value: bson.D{{Key: "$gt", Value: 0}}})
	case storage.LicenseFilterBanned:
		f = append(f, bson.E{Key: "banned", Value: true})
	case storage.LicenseFilterExpired:
		f = append(f, expiredBy("expiresAt", now))
	default:
		return 0, fmt.Errorf("mongo: delete licenses: unknown filter %q", filter)
	}
	res, err := s.licenses.DeleteMany(ctx, f)
	if err != nil {
		return 0, wrap("delete licenses where "+filter, err)
	}
	return int(res.DeletedCount), nil
}
