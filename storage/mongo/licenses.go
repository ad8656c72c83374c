package mongo

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"

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
	MaxSeats    int       `bson:"maxSeats"` // absent before seats existed: 0, unlimited
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
		MaxSeats:    l.MaxSeats,
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
		MaxSeats:    d.MaxSeats,
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

// DeleteLicense removes the app's license, then its variables (see DeleteUser: the
// variables go even when the license was already gone, so a retry finishes the job).
func (s *Store) DeleteLicense(ctx context.Context, appID, id string) error {
	const op = "delete license"
	intent, err := s.stageDelete(ctx, s.licenses, byApp(appID, id))
	if err != nil {
		return wrap(op, err)
	}
	res, err := s.licenses.DeleteOne(ctx, byApp(appID, id))
	if err != nil {
		return wrap(op, err)
	}
	if res.DeletedCount == 0 {
		intent.abandon(ctx, s)
	} else {
		defer intent.settle(ctx, s) // confirmed by the license's absence (see DeleteUser)
	}
	if err := s.deleteOwnedVariables(ctx, appID, storage.ScopeLicense, []string{id}); err != nil {
		return wrap(op+": variables", err)
	}
	if res.DeletedCount == 0 {
		return wrap(op, mongo.ErrNoDocuments)
	}
	return nil
}

// DeleteLicenses removes the app's licenses with these ids, then their variables; the
// delete count is exact on both servers. After the first step the app has no license with
// any of the ids, so every variable naming one of them as owner is a deleted license's.
func (s *Store) DeleteLicenses(ctx context.Context, appID string, ids []string) (int, error) {
	const op = "delete licenses"
	if len(ids) == 0 {
		return 0, nil
	}
	// The request's audit entry is staged first, confirmed by the deletions
	// (auditbulkdelete.go), and appended once they are done.
	intent, err := s.stageDeleteMany(ctx, s.licenses, appID, ids)
	if err != nil {
		return 0, wrap(op+": audit", err)
	}
	res, err := s.licenses.DeleteMany(ctx, bson.D{{Key: "appId", Value: appID}, {Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
	if err != nil {
		return 0, wrap(op, err) // it may be made: RecoverAudit decides by the documents
	}
	n := int(res.DeletedCount)
	intent.settleDeleted(ctx, s, n, nil)
	if err := s.deleteOwnedVariables(ctx, appID, storage.ScopeLicense, ids); err != nil {
		return 0, wrap(op+": variables", err)
	}
	return n, nil
}

// licenseDeleteChunk bounds the ids of one step of DeleteLicensesWhere.
const licenseDeleteChunk = 1000

// DeleteLicensesWhere removes the app's licenses matching a LicenseFilter*, then their
// variables.
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
	op := "delete licenses where " + filter
	// The matching licenses are found first, so that their variables can follow them:
	// each chunk is deleted under the filter again (a license that stopped matching
	// meanwhile stays: deleteWhereClaimed, as FerretDB 1.x alone would delete it), then
	// the variables of the ids no longer there are swept.
	found, err := findVersioned(ctx, s.licenses, f)
	if err != nil {
		return 0, wrap(op, err)
	}
	// The request's audit entry is staged with the ids found (read once, with their
	// markers), confirmed by their deletions (auditbulkdelete.go), and appended once
	// they are all done.
	ids := make([]string, len(found))
	var markers []string
	for i, d := range found {
		ids[i] = d.ID
		if d.Marker != "" {
			markers = append(markers, d.Marker)
		}
	}
	intent, err := s.stageDeleteFound(ctx, s.licenses, ids, markers)
	if err != nil {
		return 0, wrap(op+": audit", err)
	}
	total, err := s.deleteLicensesFound(ctx, appID, f, found, op, intent)
	intent.settleDeleted(ctx, s, total, err)
	return total, err
}

// deleteLicensesFound deletes found (the app's licenses read as matching f) in chunks,
// each under f again, then the variables of those gone; intent, the request's staged
// audit entry, is touched after each chunk.
func (s *Store) deleteLicensesFound(ctx context.Context, appID string, f bson.D, found []versionedID, op string, intent *auditIntent) (int, error) {
	total := 0
	for part := range slices.Chunk(found, licenseDeleteChunk) {
		chunk := make([]string, len(part))
		for i, d := range part {
			chunk[i] = d.ID
		}
		in := bson.E{Key: "_id", Value: bson.D{{Key: "$in", Value: chunk}}}
		n, err := s.deleteWhereClaimed(ctx, s.licenses, f, part)
		total += n
		if err != nil {
			return total, wrap(op, err)
		}
		kept, err := findIDs(ctx, s.licenses, bson.D{{Key: "appId", Value: appID}, in})
		if err != nil {
			return total, wrap(op, err)
		}
		left := make(map[string]bool, len(kept))
		for _, id := range kept {
			left[id] = true
		}
		gone := slices.DeleteFunc(slices.Clone(chunk), func(id string) bool { return left[id] })
		if err := s.deleteOwnedVariables(ctx, appID, storage.ScopeLicense, gone); err != nil {
			return total, wrap(op+": variables", err)
		}
		intent.touch(ctx, s)
	}
	return total, nil
}
