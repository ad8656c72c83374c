package mongo

import (
	"context"
	"fmt"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/keyward/keyward/storage"
)

var (
	_ storage.VariableStore = (*Store)(nil)
	_ storage.FileStore     = (*Store)(nil)
	_ storage.RuleStore     = (*Store)(nil)
)

// variableDoc is a variable as stored; zero times are left out (omitempty).
type variableDoc struct {
	ID      string `bson:"_id"`
	Version int64  `bson:"version"` // see versioned
	AppID   string `bson:"appId"`
	Scope   string `bson:"scope"`
	// OwnerID is "" for app variables, so that (appId, scope, ownerId, key) carries the
	// unique index on every document.
	OwnerID   string    `bson:"ownerId"`
	Key       string    `bson:"key"`
	Value     string    `bson:"value"`
	Type      string    `bson:"type"`
	CreatedAt time.Time `bson:"createdAt,omitempty"`
	UpdatedAt time.Time `bson:"updatedAt,omitempty"`
}

func toVariableDoc(v storage.Variable, version int64) variableDoc {
	return variableDoc{
		ID:        v.ID,
		Version:   version,
		AppID:     v.AppID,
		Scope:     v.Scope,
		OwnerID:   v.OwnerID,
		Key:       v.Key,
		Value:     v.Value,
		Type:      v.Type,
		CreatedAt: storage.Truncate(v.CreatedAt),
		UpdatedAt: storage.Truncate(v.UpdatedAt),
	}
}

func (d variableDoc) variable() storage.Variable {
	return storage.Variable{
		ID:        d.ID,
		AppID:     d.AppID,
		Scope:     d.Scope,
		OwnerID:   d.OwnerID,
		Key:       d.Key,
		Value:     d.Value,
		Type:      d.Type,
		CreatedAt: fromDate(d.CreatedAt),
		UpdatedAt: fromDate(d.UpdatedAt),
	}
}

// claimKey implements versioned: a variable's claims belong to its app.
func (d variableDoc) claimKey() (string, int64, string) { return d.ID, d.Version, d.AppID }

// checkScope refuses a scope the contract does not know, and an app variable with an owner.
func checkScope(scope, ownerID string) error {
	switch scope {
	case storage.ScopeApp:
		if ownerID != "" {
			return fmt.Errorf("app variable with owner %q", ownerID)
		}
	case storage.ScopeUser, storage.ScopeLicense:
	default:
		return fmt.Errorf("unknown variable scope %q", scope)
	}
	return nil
}

// ownerRefs names the users or licenses a batch of variables belongs to, to be checked
// by insertOwned: one $in query per app and scope, however many owners the batch has.
func (s *Store) ownerRefs(owners map[[2]string][]string) []parentRef {
	var out []parentRef
	for k, ids := range owners {
		appID, scope := k[0], k[1]
		coll, what := s.users, "users"
		if scope == storage.ScopeLicense {
			coll, what = s.licenses, "licenses"
		}
		ids = distinct(ids)
		out = append(out, parentRef{what: fmt.Sprintf("%d %s of app %s", len(ids), what, appID), coll: coll,
			filter: bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}, {Key: "appId", Value: appID}},
			want:   int64(len(ids))})
	}
	return out
}

// CreateVariables inserts every variable with one InsertMany, all or none, while their
// apps and owners exist (see insertOwned): the unique index answers ErrConflict on a key
// taken in its scope and owner or repeated in the batch, and what was inserted is deleted
// again. DeleteUser and the license deletes remove the owner first and then its variables,
// so a variable is either refused or swept.
func (s *Store) CreateVariables(ctx context.Context, vs []storage.Variable) error {
	const op = "create variables"
	version := newVersion()
	docs := make([]any, len(vs))
	ids := make([]string, len(vs))
	apps := make([]string, len(vs))
	owners := map[[2]string][]string{}
	for i, v := range vs {
		if err := checkScope(v.Scope, v.OwnerID); err != nil {
			return fmt.Errorf("mongo: %s: record %d: %w", op, i, err)
		}
		docs[i], ids[i], apps[i] = toVariableDoc(v, version), v.ID, v.AppID
		if v.Scope == storage.ScopeUser || v.Scope == storage.ScopeLicense {
			k := [2]string{v.AppID, v.Scope}
			owners[k] = append(owners[k], v.OwnerID)
		}
	}
	return s.insertOwned(ctx, op, s.variables, docs, batchUndo(ids, version), append(s.appParents(apps), s.ownerRefs(owners)...))
}

// GetVariable reads the app's variable by id.
func (s *Store) GetVariable(ctx context.Context, appID, id string) (storage.Variable, error) {
	d, err := findDoc[variableDoc](ctx, s.variables, "get variable", byApp(appID, id))
	return d.variable(), err
}

// ownedBy filters the variables of one scope and owner of the app.
func ownedBy(appID, scope, ownerID string) bson.D {
	return bson.D{{Key: "appId", Value: appID}, {Key: "scope", Value: scope}, {Key: "ownerId", Value: ownerID}}
}

// GetVariableByKey finds the variable with exactly this key in its scope and owner.
func (s *Store) GetVariableByKey(ctx context.Context, appID, scope, ownerID, key string) (storage.Variable, error) {
	d, err := findDoc[variableDoc](ctx, s.variables, "get variable by key",
		append(ownedBy(appID, scope, ownerID), bson.E{Key: "key", Value: key}))
	return d.variable(), err
}

// findAll reads every document of coll matching filter in the order of sort.
func findAll[D any, R any](ctx context.Context, coll *mongo.Collection, op string, filter, sort bson.D, record func(D) R) ([]R, error) {
	cur, err := coll.Find(ctx, filter, options.Find().SetSort(sort))
	if err != nil {
		return nil, wrap(op, err)
	}
	var docs []D
	if err := cur.All(ctx, &docs); err != nil {
		return nil, wrap(op, err)
	}
	var out []R
	for _, d := range docs {
		out = append(out, record(d))
	}
	return out, nil
}

// ListVariables answers the variables of one scope and owner, sorted by key (binary order,
// as the SQLite engine compares).
func (s *Store) ListVariables(ctx context.Context, appID, scope, ownerID string) ([]storage.Variable, error) {
	return findAll(ctx, s.variables, "list variables", ownedBy(appID, scope, ownerID), sortBy("key", false), variableDoc.variable)
}

// UpdateVariable applies fn to the app's variable under a version claim (see updateDoc).
// The id, the app, the scope, the owner and the creation time are kept: a variable never
// moves to another owner. The unique index answers ErrConflict on a taken key.
func (s *Store) UpdateVariable(ctx context.Context, appID, id string, fn func(*storage.Variable) error) (storage.Variable, error) {
	d, err := updateDoc(ctx, s, s.variables, "update variable", byApp(appID, id),
		func(cur variableDoc) (variableDoc, error) {
			next := cur.variable()
			if err := fn(&next); err != nil {
				return variableDoc{}, err
			}
			doc := toVariableDoc(next, cur.Version+1)
			doc.ID, doc.AppID, doc.Scope, doc.OwnerID, doc.CreatedAt = cur.ID, cur.AppID, cur.Scope, cur.OwnerID, cur.CreatedAt
			return doc, nil
		})
	if err != nil {
		return storage.Variable{}, err
	}
	return d.variable(), nil
}

// DeleteVariable removes the app's variable.
func (s *Store) DeleteVariable(ctx context.Context, appID, id string) error {
	return deleteOne(ctx, s, s.variables, "delete variable", byApp(appID, id))
}

// deleteOwnedVariables removes the variables of the app's owners of one scope, after the
// owners themselves (see insertOwned).
func (s *Store) deleteOwnedVariables(ctx context.Context, appID, scope string, ownerIDs []string) error {
	if len(ownerIDs) == 0 {
		return nil
	}
	_, err := s.variables.DeleteMany(ctx, bson.D{{Key: "appId", Value: appID}, {Key: "scope", Value: scope},
		{Key: "ownerId", Value: bson.D{{Key: "$in", Value: ownerIDs}}}})
	return err
}

// fileDoc is a file record as stored; zero times are left out (omitempty).
type fileDoc struct {
	ID          string    `bson:"_id"`
	Version     int64     `bson:"version"` // see versioned
	AppID       string    `bson:"appId"`
	Name        string    `bson:"name"`
	FileVersion string    `bson:"fileVersion"` // the file's own version string
	Size        int64     `bson:"size"`
	SHA256      string    `bson:"sha256"`
	BlobKey     string    `bson:"blobKey"`
	ContentType string    `bson:"contentType"`
	CreatedAt   time.Time `bson:"createdAt,omitempty"`
	UpdatedAt   time.Time `bson:"updatedAt,omitempty"`
}

func toFileDoc(f storage.File, version int64) fileDoc {
	return fileDoc{
		ID:          f.ID,
		Version:     version,
		AppID:       f.AppID,
		Name:        f.Name,
		FileVersion: f.Version,
		Size:        f.Size,
		SHA256:      f.SHA256,
		BlobKey:     f.BlobKey,
		ContentType: f.ContentType,
		CreatedAt:   storage.Truncate(f.CreatedAt),
		UpdatedAt:   storage.Truncate(f.UpdatedAt),
	}
}

func (d fileDoc) file() storage.File {
	return storage.File{
		ID:          d.ID,
		AppID:       d.AppID,
		Name:        d.Name,
		Version:     d.FileVersion,
		Size:        d.Size,
		SHA256:      d.SHA256,
		BlobKey:     d.BlobKey,
		ContentType: d.ContentType,
		CreatedAt:   fromDate(d.CreatedAt),
		UpdatedAt:   fromDate(d.UpdatedAt),
	}
}

// claimKey implements versioned: a file's claims belong to its app.
func (d fileDoc) claimKey() (string, int64, string) { return d.ID, d.Version, d.AppID }

// CreateFile inserts f while its app exists (ErrNotFound otherwise, see insertOwned).
func (s *Store) CreateFile(ctx context.Context, f storage.File) error {
	return s.insertOwned(ctx, "create file", s.files, []any{toFileDoc(f, newVersion())},
		bson.D{{Key: "_id", Value: f.ID}}, s.appParents([]string{f.AppID}))
}

// GetFile reads the app's file by id.
func (s *Store) GetFile(ctx context.Context, appID, id string) (storage.File, error) {
	d, err := findDoc[fileDoc](ctx, s.files, "get file", byApp(appID, id))
	return d.file(), err
}

// LatestFile answers the app's newest file (by creation time, then id) with the name, or
// of the whole app when name is "".
func (s *Store) LatestFile(ctx context.Context, appID, name string) (storage.File, error) {
	filter := bson.D{{Key: "appId", Value: appID}}
	if name != "" {
		filter = append(filter, bson.E{Key: "name", Value: name})
	}
	var d fileDoc
	if err := s.files.FindOne(ctx, filter, options.FindOne().SetSort(sortBy("createdAt", true))).Decode(&d); err != nil {
		return storage.File{}, wrap("latest file", err)
	}
	return d.file(), nil
}

// ListFiles answers every file of the app, newest first.
func (s *Store) ListFiles(ctx context.Context, appID string) ([]storage.File, error) {
	return findAll(ctx, s.files, "list files", bson.D{{Key: "appId", Value: appID}}, sortBy("createdAt", true), fileDoc.file)
}

// UpdateFile applies fn to the app's file under a version claim (see updateDoc). The id,
// the app and the creation time are kept.
func (s *Store) UpdateFile(ctx context.Context, appID, id string, fn func(*storage.File) error) (storage.File, error) {
	d, err := updateDoc(ctx, s, s.files, "update file", byApp(appID, id),
		func(cur fileDoc) (fileDoc, error) {
			next := cur.file()
			if err := fn(&next); err != nil {
				return fileDoc{}, err
			}
			doc := toFileDoc(next, cur.Version+1)
			doc.ID, doc.AppID, doc.CreatedAt = cur.ID, cur.AppID, cur.CreatedAt
			return doc, nil
		})
	if err != nil {
		return storage.File{}, err
	}
	return d.file(), nil
}

// DeleteFile removes the app's file record (its blob is the caller's).
func (s *Store) DeleteFile(ctx context.Context, appID, id string) error {
	return deleteOne(ctx, s, s.files, "delete file", byApp(appID, id))
}

// ruleDoc is a rule as stored; zero times are left out (omitempty).
type ruleDoc struct {
	ID      string `bson:"_id"`
	Version int64  `bson:"version"` // see versioned
	AppID   string `bson:"appId"`
	// (AppID, Type, Action, Value) carries the unique index, as stored.
	Type      string    `bson:"type"`
	Action    string    `bson:"action"`
	Value     string    `bson:"value"`
	Note      string    `bson:"note"`
	Enabled   bool      `bson:"enabled"`
	CreatedAt time.Time `bson:"createdAt,omitempty"`
	UpdatedAt time.Time `bson:"updatedAt,omitempty"`
}

func toRuleDoc(r storage.Rule, version int64) ruleDoc {
	return ruleDoc{
		ID:        r.ID,
		Version:   version,
		AppID:     r.AppID,
		Type:      r.Type,
		Action:    r.Action,
		Value:     r.Value,
		Note:      r.Note,
		Enabled:   r.Enabled,
		CreatedAt: storage.Truncate(r.CreatedAt),
		UpdatedAt: storage.Truncate(r.UpdatedAt),
	}
}

func (d ruleDoc) rule() storage.Rule {
	return storage.Rule{
		ID:        d.ID,
		AppID:     d.AppID,
		Type:      d.Type,
		Action:    d.Action,
		Value:     d.Value,
		Note:      d.Note,
		Enabled:   d.Enabled,
		CreatedAt: fromDate(d.CreatedAt),
		UpdatedAt: fromDate(d.UpdatedAt),
	}
}

// claimKey implements versioned: a rule's claims belong to its app.
func (d ruleDoc) claimKey() (string, int64, string) { return d.ID, d.Version, d.AppID }

// CreateRules inserts every rule with one InsertMany, all or none (see CreateLicenses).
func (s *Store) CreateRules(ctx context.Context, rs []storage.Rule) error {
	version := newVersion()
	docs := make([]any, len(rs))
	ids := make([]string, len(rs))
	apps := make([]string, len(rs))
	for i, r := range rs {
		docs[i], ids[i], apps[i] = toRuleDoc(r, version), r.ID, r.AppID
	}
	return s.insertOwned(ctx, "create rules", s.rules, docs, batchUndo(ids, version), s.appParents(apps))
}

// GetRule reads the app's rule by id.
func (s *Store) GetRule(ctx context.Context, appID, id string) (storage.Rule, error) {
	d, err := findDoc[ruleDoc](ctx, s.rules, "get rule", byApp(appID, id))
	return d.rule(), err
}

// ListRules answers the app's rules matching q, oldest first.
func (s *Store) ListRules(ctx context.Context, appID string, q storage.RuleQuery) ([]storage.Rule, error) {
	filter := bson.D{{Key: "appId", Value: appID}}
	if q.Type != "" {
		filter = append(filter, bson.E{Key: "type", Value: q.Type})
	}
	if q.Action != "" {
		filter = append(filter, bson.E{Key: "action", Value: q.Action})
	}
	return findAll(ctx, s.rules, "list rules", filter, sortBy("createdAt", false), ruleDoc.rule)
}

// UpdateRule applies fn to the app's rule under a version claim (see updateDoc). The id,
// the app and the creation time are kept; the unique index answers ErrConflict.
func (s *Store) UpdateRule(ctx context.Context, appID, id string, fn func(*storage.Rule) error) (storage.Rule, error) {
	d, err := updateDoc(ctx, s, s.rules, "update rule", byApp(appID, id),
		func(cur ruleDoc) (ruleDoc, error) {
			next := cur.rule()
			if err := fn(&next); err != nil {
				return ruleDoc{}, err
			}
			doc := toRuleDoc(next, cur.Version+1)
			doc.ID, doc.AppID, doc.CreatedAt = cur.ID, cur.AppID, cur.CreatedAt
			return doc, nil
		})
	if err != nil {
		return storage.Rule{}, err
	}
	return d.rule(), nil
}

// DeleteRule removes the app's rule.
func (s *Store) DeleteRule(ctx context.Context, appID, id string) error {
	return deleteOne(ctx, s, s.rules, "delete rule", byApp(appID, id))
}
