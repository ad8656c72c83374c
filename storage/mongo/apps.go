package mongo

import (
	"context"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/keyward/keyward/storage"
)

var (
	_ storage.AppStore      = (*Store)(nil)
	_ storage.AppStatsStore = (*Store)(nil)
)

// appDoc is an app as stored; zero times are left out (omitempty).
type appDoc struct {
	ID        string `bson:"_id"`
	Version   int64  `bson:"version"` // see versioned
	AccountID string `bson:"accountId"`
	Name      string `bson:"name"`
	// NameLower carries the per-account unique index (no collation on FerretDB).
	NameLower   string `bson:"nameLower"`
	Description string `bson:"description"`
	AppVersion  string `bson:"appVersion"` // the app's own version string
	Enabled     bool   `bson:"enabled"`
	Paused      bool   `bson:"paused"`
	AntiDebug   bool   `bson:"antiDebug"`
	AntiVM      bool   `bson:"antiVm"`
	LockHwid    bool   `bson:"lockHwid"`
	LockIP      bool   `bson:"lockIp"`
	LockPcName  bool   `bson:"lockPcName"`
	SecretHash  string `bson:"secretHash"`
	SecretLast6 string `bson:"secretLast6"`
	// SessionTimeout (seconds) and PlainFiles are absent from documents written before
	// they existed, which decode as 0 and false, their defaults.
	SessionTimeout int  `bson:"sessionTimeout"`
	PlainFiles     bool `bson:"plainFiles"`
	// The licensing members, absent before they existed (their zero values are the
	// defaults). SigningKey is sealed.
	SigningKey      string `bson:"signingKey"`
	SignResponses   bool   `bson:"signResponses"`
	GraceSeconds    int    `bson:"graceSeconds"`
	LicenseFileDays int    `bson:"licenseFileDays"`
	// Portal is absent from documents written before the portal's settings moved to the
	// app: the copy at Open (copyPortalSwitches) sets it for an app with a portal
	// connection; any other decodes as off, its default.
	Portal    *portalDoc `bson:"portal,omitempty"`
	CreatedAt time.Time  `bson:"createdAt,omitempty"`
	UpdatedAt time.Time  `bson:"updatedAt,omitempty"`
}

func toAppDoc(a storage.App, version int64) appDoc {
	return appDoc{
		ID:              a.ID,
		Version:         version,
		AccountID:       a.AccountID,
		Name:            a.Name,
		NameLower:       strings.ToLower(a.Name),
		Description:     a.Description,
		AppVersion:      a.Version,
		Enabled:         a.Enabled,
		Paused:          a.Paused,
		AntiDebug:       a.AntiDebug,
		AntiVM:          a.AntiVM,
		LockHwid:        a.LockHwid,
		LockIP:          a.LockIP,
		LockPcName:      a.LockPcName,
		SecretHash:      a.SecretHash,
		SecretLast6:     a.SecretLast6,
		SessionTimeout:  a.SessionTimeout,
		PlainFiles:      a.PlainFiles,
		SigningKey:      a.SigningKey,
		SignResponses:   a.SignResponses,
		GraceSeconds:    a.GraceSeconds,
		LicenseFileDays: a.LicenseFileDays,
		Portal:          toPortalDoc(a.Portal),
		CreatedAt:       storage.Truncate(a.CreatedAt),
		UpdatedAt:       storage.Truncate(a.UpdatedAt),
	}
}

func (d appDoc) app() storage.App {
	return storage.App{
		ID:              d.ID,
		AccountID:       d.AccountID,
		Name:            d.Name,
		Description:     d.Description,
		Version:         d.AppVersion,
		Enabled:         d.Enabled,
		Paused:          d.Paused,
		AntiDebug:       d.AntiDebug,
		AntiVM:          d.AntiVM,
		LockHwid:        d.LockHwid,
		LockIP:          d.LockIP,
		LockPcName:      d.LockPcName,
		SecretHash:      d.SecretHash,
		SecretLast6:     d.SecretLast6,
		SessionTimeout:  d.SessionTimeout,
		PlainFiles:      d.PlainFiles,
		SigningKey:      d.SigningKey,
		SignResponses:   d.SignResponses,
		GraceSeconds:    d.GraceSeconds,
		LicenseFileDays: d.LicenseFileDays,
		Portal:          d.Portal.portal(),
		CreatedAt:       fromDate(d.CreatedAt),
		UpdatedAt:       fromDate(d.UpdatedAt),
	}
}

// portalDoc is the app's buyer portal settings as stored (storage.AppPortal).
type portalDoc struct {
	Enabled     bool `bson:"enabled"`
	HWIDReset   bool `bson:"hwidReset"`
	SeatRelease bool `bson:"seatRelease"`
	Downloads   bool `bson:"downloads"`
	Resend      bool `bson:"resend"`
}

func toPortalDoc(p storage.AppPortal) *portalDoc {
	return &portalDoc{Enabled: p.Enabled, HWIDReset: p.HWIDReset, SeatRelease: p.SeatRelease, Downloads: p.Downloads, Resend: p.Resend}
}

func (d *portalDoc) portal() storage.AppPortal {
	if d == nil {
		return storage.AppPortal{}
	}
	return storage.AppPortal{Enabled: d.Enabled, PortalSwitches: storage.PortalSwitches{HWIDReset: d.HWIDReset,
		SeatRelease: d.SeatRelease, Downloads: d.Downloads, Resend: d.Resend}}
}

// claimKey implements versioned: an app owns its own claims, as it owns its records'.
func (d appDoc) claimKey() (string, int64, string) { return d.ID, d.Version, d.ID }

// ownedApp filters on the account's app: another account's app is not found.
func ownedApp(accountID, id string) bson.D {
	return bson.D{{Key: "_id", Value: id}, {Key: "accountId", Value: accountID}}
}

// CreateApp inserts a; the unique _id and (accountId, nameLower) indexes answer ErrConflict.
func (s *Store) CreateApp(ctx context.Context, a storage.App) error {
	if err := storage.SealApp(s.sealer, &a); err != nil {
		return wrap("create app", err)
	}
	// insertOwned with no parent: one insert, with its audit entry staged (stageCreation).
	return s.insertOwned(ctx, "create app", s.apps, []any{toAppDoc(a, newVersion())}, nil, nil)
}

// GetApp reads the account's app.
func (s *Store) GetApp(ctx context.Context, accountID, id string) (storage.App, error) {
	d, err := findDoc[appDoc](ctx, s.apps, "get app", ownedApp(accountID, id))
	return s.openApp("get app", d, err)
}

// GetAppBySecretHash finds the app whose current secret hashes to hash.
func (s *Store) GetAppBySecretHash(ctx context.Context, hash string) (storage.App, error) {
	// An app without a secret stores "": that must never identify anyone.
	if hash == "" {
		return storage.App{}, wrap("get app by secret", mongo.ErrNoDocuments)
	}
	d, err := findDoc[appDoc](ctx, s.apps, "get app by secret", bson.D{{Key: "secretHash", Value: hash}})
	return s.openApp("get app by secret", d, err)
}

// GetAppByID reads an app whatever its account.
func (s *Store) GetAppByID(ctx context.Context, id string) (storage.App, error) {
	d, err := findDoc[appDoc](ctx, s.apps, "get app by id", bson.D{{Key: "_id", Value: id}})
	return s.openApp("get app by id", d, err)
}

// openApp converts a stored document (when err is nil), opening its sealed signing key.
func (s *Store) openApp(op string, d appDoc, err error) (storage.App, error) {
	if err != nil {
		return storage.App{}, err
	}
	a := d.app()
	if err := storage.OpenApp(s.sealer, &a); err != nil {
		return storage.App{}, wrap(op, err)
	}
	return a, nil
}

// ListApps answers every app of the account, oldest first.
func (s *Store) ListApps(ctx context.Context, accountID string) ([]storage.App, error) {
	cur, err := s.apps.Find(ctx, bson.D{{Key: "accountId", Value: accountID}},
		options.Find().SetSort(sortBy("createdAt", false)))
	if err != nil {
		return nil, wrap("list apps", err)
	}
	var docs []appDoc
	if err := cur.All(ctx, &docs); err != nil {
		return nil, wrap("list apps", err)
	}
	out := make([]storage.App, len(docs))
	for i, d := range docs {
		if out[i], err = s.openApp("list apps", d, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// CountApps counts the account's apps.
func (s *Store) CountApps(ctx context.Context, accountID string) (int, error) {
	return count(ctx, s.apps, "count apps", bson.D{{Key: "accountId", Value: accountID}})
}

// UpdateApp applies fn to the account's app under a version claim (see updateDoc). The id,
// the owning account and the creation time are kept from the stored record.
func (s *Store) UpdateApp(ctx context.Context, accountID, id string, fn func(*storage.App) error) (storage.App, error) {
	d, err := updateDoc(ctx, s, s.apps, "update app", ownedApp(accountID, id),
		func(cur appDoc) (appDoc, error) {
			next, err := s.openApp("update app", cur, nil)
			if err != nil {
				return appDoc{}, err
			}
			if err := fn(&next); err != nil {
				return appDoc{}, err
			}
			next.ID = cur.ID
			if err := storage.SealApp(s.sealer, &next); err != nil {
				return appDoc{}, wrap("update app", err)
			}
			doc := toAppDoc(next, cur.Version+1)
			doc.ID, doc.AccountID, doc.CreatedAt = cur.ID, cur.AccountID, cur.CreatedAt
			return doc, nil
		})
	return s.openApp("update app", d, err)
}

// appRecordColls answers the collections holding records that belong to an app, by
// appId, in the order DeleteApp sweeps them: users before devices, so that a device
// created while its user is being swept is still caught (see insertOwned). Every later
// record kind of an app (sessions, variables, files, rules, …) must be added here, and
// counted in CountAppRecords when SPEC 4.2 counts it (integrations and hooks are not). Variables come
// after users and licenses, their owners, and deliveries and attempts after integrations;
// log entries, deliveries, attempts and client session copies are not checked against
// their app when written, and are swept here like the rest.
func (s *Store) appRecordColls() []*mongo.Collection {
	return []*mongo.Collection{s.users, s.devices, s.licenses, s.tokens, s.variables, s.files, s.rules,
		s.integrations, s.deliveries, s.history, s.attempts, s.logs, s.clientSessions, s.wsHooks,
		s.storeConnections(), s.storeProducts(), s.storeOrders(), s.storeOrderEvents()}
}

// DeleteApp removes the account's app, then every record that belongs to it. Without
// transactions this is several steps: the app goes first, so that creators of new records
// (which check the app after inserting) either see it gone or are swept. If a delete stops
// part-way, the records left behind belong to no app, and calling DeleteApp again (it
// answers ErrNotFound then) finishes the sweep.
func (s *Store) DeleteApp(ctx context.Context, accountID, id string) error {
	const op = "delete app"
	intent, err := s.stageDelete(ctx, s.apps, ownedApp(accountID, id))
	if err != nil {
		return wrap(op, err)
	}
	res, err := s.apps.DeleteOne(ctx, ownedApp(accountID, id))
	if err != nil {
		return wrap(op, err)
	}
	if res.DeletedCount == 0 {
		intent.abandon(ctx, s)
	} else {
		defer intent.settle(ctx, s) // confirmed by the app's absence (see DeleteUser)
	}
	if res.DeletedCount == 0 {
		// Another account's app keeps its records; only an app gone altogether (an earlier
		// delete that stopped part-way) has its leftovers swept.
		n, err := s.apps.CountDocuments(ctx, bson.D{{Key: "_id", Value: id}}, options.Count().SetLimit(1))
		if err != nil {
			return wrap(op, err)
		}
		if n > 0 {
			return wrap(op, mongo.ErrNoDocuments)
		}
	}
	for _, coll := range s.appRecordColls() {
		if _, err := coll.DeleteMany(ctx, bson.D{{Key: "appId", Value: id}}); err != nil {
			return wrap(op+": "+coll.Name(), err)
		}
	}
	if err := s.deleteClaims(ctx, id); err != nil {
		return wrap(op+": claims", err)
	}
	if res.DeletedCount == 0 {
		return wrap(op, mongo.ErrNoDocuments)
	}
	return nil
}

// CountAppRecords counts the app's records of each kind. Variables are the app's own
// (scope app), as SPEC 4.2 counts them. Sessions are left 0: the live sessions are the
// cluster engine's, and clientSessions holds only their lazily written copies (expired
// ones included), so the caller counts them there.
func (s *Store) CountAppRecords(ctx context.Context, appID string) (storage.AppCounts, error) {
	const op = "count app records"
	byAppID := bson.D{{Key: "appId", Value: appID}}
	var c storage.AppCounts
	for _, f := range []struct {
		coll   *mongo.Collection
		filter bson.D
		n      *int
	}{
		{s.users, byAppID, &c.Users},
		{s.licenses, byAppID, &c.Licenses},
		{s.tokens, byAppID, &c.Tokens},
		{s.variables, ownedBy(appID, storage.ScopeApp, ""), &c.Variables},
		{s.files, byAppID, &c.Files},
		{s.rules, byAppID, &c.Rules},
	} {
		n, err := count(ctx, f.coll, op+": "+f.coll.Name(), f.filter)
		if err != nil {
			return storage.AppCounts{}, err
		}
		*f.n = n
	}
	return c, nil
}

// AppStats computes each figure with CountDocuments: the server counts, no record is
// loaded. The counts are separate reads, so under concurrent writes they may not add up
// exactly.
func (s *Store) AppStats(ctx context.Context, appID string, q storage.AppStatsQuery) (storage.AppStats, error) {
	const op = "app stats"
	app := bson.E{Key: "appId", Value: appID}
	var st storage.AppStats
	for _, f := range []struct {
		coll   *mongo.Collection
		filter bson.D
		n      *int
	}{
		{s.users, bson.D{app}, &st.Users},
		{s.users, bson.D{app, {Key: "enabled", Value: true}, {Key: "banned", Value: false},
			// Not expired: no expiry (the field is absent for the zero time), or after now.
			{Key: "$or", Value: bson.A{
				bson.D{{Key: "expiresAt", Value: bson.D{{Key: "$exists", Value: false}}}},
				bson.D{{Key: "expiresAt", Value: bson.D{{Key: "$gt", Value: q.Now}}}},
			}}}, &st.ActiveUsers},
		{s.users, bson.D{app, {Key: "banned", Value: true}}, &st.BannedUsers},
		// A user who never logged in has no lastLoginAt, which $gte never matches.
		{s.users, bson.D{app, {Key: "lastLoginAt", Value: bson.D{{Key: "$gte", Value: q.DayStart}}}}, &st.LoginsSinceDay},
		{s.users, bson.D{app, {Key: "lastLoginAt", Value: bson.D{{Key: "$gte", Value: q.WeekStart}}}}, &st.LoginsSinceWeek},
		{s.licenses, bson.D{app}, &st.Licenses},
		{s.licenses, bson.D{app, {Key: "usedCount", Value: bson.D{{Key: "$gt", Value: 0}}}}, &st.UsedLicenses},
	} {
		n, err := count(ctx, f.coll, op, f.filter)
		if err != nil {
			return storage.AppStats{}, err
		}
		*f.n = n
	}
	if !q.NewSince.IsZero() {
		n, err := count(ctx, s.users, op, bson.D{app, {Key: "createdAt", Value: bson.D{{Key: "$gte", Value: q.NewSince}}}})
		if err != nil {
			return storage.AppStats{}, err
		}
		st.NewUsers = n
	}
	return st, nil
}
