package mongo

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/keyward/keyward/storage"
)

var _ storage.LogStore = (*Store)(nil)

// Bucket widths of LogSeries, in milliseconds.
const (
	hourMillis = int64(time.Hour / time.Millisecond)
	dayMillis  = 24 * hourMillis
)

// logDoc is a log entry as stored. Entries are never updated, so they carry no version.
//
// Hour and Day are the entry's UTC bucket numbers (unix milliseconds floor-divided by the
// bucket width), computed when the entry is written. LogSeries groups on them: the date
// operators that would compute buckets in the pipeline ($dateTrunc, $dateToString, date
// arithmetic in $group keys) are missing from FerretDB 1.x, while a $group on a plain
// field with $sum works on both servers.
type logDoc struct {
	ID            string `bson:"_id"`
	AppID         string `bson:"appId"`
	Event         string `bson:"event"`
	Message       string `bson:"message"`
	Username      string `bson:"username"`
	UsernameLower string `bson:"usernameLower"` // what the username filter reads
	IP            string `bson:"ip"`
	Country       string `bson:"country"`
	Level         string `bson:"level"`
	Data          string `bson:"data"`
	// CreatedAt is always stored (no omitempty): every range, sort and trim reads it.
	CreatedAt time.Time `bson:"createdAt"`
	Hour      int64     `bson:"hour"`
	Day       int64     `bson:"day"`
}

// bucketOf answers the number of the bucket of width w (milliseconds) holding t, floored
// so that instants before 1970 fall in their own bucket too.
func bucketOf(t time.Time, w int64) int64 {
	ms := t.UnixMilli()
	b := ms / w
	if ms%w < 0 {
		b--
	}
	return b
}

func toLogDoc(e storage.LogEntry) logDoc {
	at := storage.Truncate(e.CreatedAt)
	return logDoc{
		ID:            e.ID,
		AppID:         e.AppID,
		Event:         e.Event,
		Message:       e.Message,
		Username:      e.Username,
		UsernameLower: strings.ToLower(e.Username),
		IP:            e.IP,
		Country:       e.Country,
		Level:         e.Level,
		Data:          e.Data,
		CreatedAt:     at,
		Hour:          bucketOf(at, hourMillis),
		Day:           bucketOf(at, dayMillis),
	}
}

func (d logDoc) entry() storage.LogEntry {
	return storage.LogEntry{
		ID:        d.ID,
		AppID:     d.AppID,
		Event:     d.Event,
		Message:   d.Message,
		Username:  d.Username,
		IP:        d.IP,
		Country:   d.Country,
		Level:     d.Level,
		Data:      d.Data,
		CreatedAt: fromDate(d.CreatedAt),
	}
}

// InsertLogs writes the batch with one unordered InsertMany. The app is not checked (a hot
// path); DeleteApp sweeps the entries of a deleted app. Unordered, a batch written again
// after a timeout stores the entries that were missing and answers ErrConflict for the rest.
func (s *Store) InsertLogs(ctx context.Context, entries []storage.LogEntry) error {
	if len(entries) == 0 {
		return nil
	}
	docs := make([]any, len(entries))
	for i, e := range entries {
		docs[i] = toLogDoc(e)
	}
	if _, err := s.logs.InsertMany(ctx, docs, options.InsertMany().SetOrdered(false)); err != nil {
		return wrap("insert logs", err)
	}
	return nil
}

// appEvent selects the app's entries of the event ("" for every event) since the instant
// (the zero time for no bound).
func appEvent(appID, event string, since time.Time) bson.D {
	f := bson.D{{Key: "appId", Value: appID}}
	if event != "" {
		f = append(f, bson.E{Key: "event", Value: event})
	}
	if !since.IsZero() {
		f = append(f, bson.E{Key: "createdAt", Value: bson.D{{Key: "$gte", Value: since}}})
	}
	return f
}

// ListLogs answers one page of the app's entries matching q, newest first, and their total.
func (s *Store) ListLogs(ctx context.Context, appID string, q storage.LogQuery) ([]storage.LogEntry, int, error) {
	filter := bson.D{{Key: "appId", Value: appID}}
	if q.Event != "" {
		filter = append(filter, bson.E{Key: "event", Value: q.Event})
	}
	if q.Level != "" {
		filter = append(filter, bson.E{Key: "level", Value: q.Level})
	}
	var bounds bson.D
	if !q.Start.IsZero() {
		bounds = append(bounds, bson.E{Key: "$gte", Value: q.Start})
	}
	if !q.End.IsZero() {
		bounds = append(bounds, bson.E{Key: "$lte", Value: q.End})
	}
	if bounds != nil {
		filter = append(filter, bson.E{Key: "createdAt", Value: bounds})
	}
	filter = searchAny(filter, q.Username, "usernameLower")
	return listDocs(ctx, s.logs, "list logs", filter, sortBy("createdAt", true), q.Page, logDoc.entry)
}

// aggregate runs pipeline on coll and decodes every result document.
func aggregate[R any](ctx context.Context, coll *mongo.Collection, op string, pipeline mongo.Pipeline) ([]R, error) {
	cur, err := coll.Aggregate(ctx, pipeline)
	if err != nil {
		return nil, wrap(op, err)
	}
	var out []R
	if err := cur.All(ctx, &out); err != nil {
		return nil, wrap(op, err)
	}
	return out, nil
}

// countBy is a $group stage counting the documents per key (a field path or a document of
// them) into n.
func countBy(key any) bson.D {
	return bson.D{{Key: "$group", Value: bson.D{{Key: "_id", Value: key}, {Key: "n", Value: bson.D{{Key: "$sum", Value: 1}}}}}}
}

func match(filter bson.D) bson.D { return bson.D{{Key: "$match", Value: filter}} }

// LogStats counts the app's entries since the instant with one $group over (level, event);
// the totals per level and per event are sums of those groups, of which there are few.
func (s *Store) LogStats(ctx context.Context, appID string, since time.Time) (storage.LogStats, error) {
	type group struct {
		ID struct {
			Level string `bson:"level"`
			Event string `bson:"event"`
		} `bson:"_id"`
		N int `bson:"n"`
	}
	groups, err := aggregate[group](ctx, s.logs, "log stats", mongo.Pipeline{
		match(appEvent(appID, "", since)),
		countBy(bson.D{{Key: "level", Value: "$level"}, {Key: "event", Value: "$event"}}),
	})
	if err != nil {
		return storage.LogStats{}, err
	}
	st := storage.LogStats{ByLevel: map[string]int{}, ByEvent: map[string]int{}}
	for _, g := range groups {
		st.Total += g.N
		st.ByLevel[g.ID.Level] += g.N
		st.ByEvent[g.ID.Event] += g.N
	}
	return st, nil
}

// LogEvents answers the app's distinct event names, sorted.
func (s *Store) LogEvents(ctx context.Context, appID string) ([]string, error) {
	names, err := distinctStrings(ctx, s.logs, "event", bson.D{{Key: "appId", Value: appID}})
	if err != nil {
		return nil, wrap("log events", err)
	}
	slices.Sort(names)
	return names, nil
}

// CountLogs counts the app's entries of the event ("" for every event) since the instant.
func (s *Store) CountLogs(ctx context.Context, appID, event string, since time.Time) (int, error) {
	return count(ctx, s.logs, "count logs", appEvent(appID, event, since))
}

// bucketCount is one group of a count by a number or a string.
type bucketCount[K any] struct {
	ID K   `bson:"_id"`
	N  int `bson:"n"`
}

// LogSeries counts the app's entries of the event ("" for every event) per UTC hour or day
// from since on, grouping on the stored bucket numbers (see logDoc).
func (s *Store) LogSeries(ctx context.Context, appID, event string, since time.Time, hourly bool) ([]storage.Bucket, error) {
	field, width := "$day", dayMillis
	if hourly {
		field, width = "$hour", hourMillis
	}
	groups, err := aggregate[bucketCount[int64]](ctx, s.logs, "log series", mongo.Pipeline{
		match(appEvent(appID, event, since)),
		countBy(field),
		{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
	})
	if err != nil {
		return nil, err
	}
	var out []storage.Bucket
	for _, g := range groups {
		out = append(out, storage.Bucket{Start: time.UnixMilli(g.ID * width).UTC(), Count: g.N})
	}
	return out, nil
}

// LogCountries counts the app's entries of each known country since the instant, most
// first (ties by country code).
func (s *Store) LogCountries(ctx context.Context, appID string, since time.Time) ([]storage.CountryCount, error) {
	filter := append(appEvent(appID, "", since), bson.E{Key: "country", Value: bson.D{{Key: "$ne", Value: ""}}})
	groups, err := aggregate[bucketCount[string]](ctx, s.logs, "log countries", mongo.Pipeline{
		match(filter),
		countBy("$country"),
		{{Key: "$sort", Value: bson.D{{Key: "n", Value: -1}, {Key: "_id", Value: 1}}}},
	})
	if err != nil {
		return nil, err
	}
	var out []storage.CountryCount
	for _, g := range groups {
		out = append(out, storage.CountryCount{Country: g.ID, Count: g.N})
	}
	return out, nil
}

// DeleteLogsBefore removes the app's entries (every app's when appID is "") created before
// the instant, answering how many.
func (s *Store) DeleteLogsBefore(ctx context.Context, appID string, before time.Time) (int, error) {
	var filter bson.D
	if appID != "" {
		filter = append(filter, bson.E{Key: "appId", Value: appID})
	}
	filter = append(filter, bson.E{Key: "createdAt", Value: bson.D{{Key: "$lt", Value: before}}})
	res, err := s.logs.DeleteMany(ctx, filter)
	if err != nil {
		return 0, wrap("delete logs before", err)
	}
	return int(res.DeletedCount), nil
}

// TrimLogs keeps the app's newest keep entries (by createdAt, then id) and removes the
// rest: the entry at position keep of the newest-first order is the newest to go, and it
// and everything older are deleted with one DeleteMany.
func (s *Store) TrimLogs(ctx context.Context, appID string, keep int) (int, error) {
	const op = "trim logs"
	var edge struct {
		ID        string    `bson:"_id"`
		CreatedAt time.Time `bson:"createdAt"`
	}
	err := s.logs.FindOne(ctx, bson.D{{Key: "appId", Value: appID}}, options.FindOne().
		SetSort(sortBy("createdAt", true)).SetSkip(int64(max(keep, 0))).
		SetProjection(bson.D{{Key: "createdAt", Value: 1}})).Decode(&edge)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return 0, nil // keep entries or fewer
	}
	if err != nil {
		return 0, wrap(op, err)
	}
	res, err := s.logs.DeleteMany(ctx, bson.D{{Key: "appId", Value: appID}, {Key: "$or", Value: bson.A{
		bson.D{{Key: "createdAt", Value: bson.D{{Key: "$lt", Value: edge.CreatedAt}}}},
		bson.D{{Key: "createdAt", Value: edge.CreatedAt}, {Key: "_id", Value: bson.D{{Key: "$lte", Value: edge.ID}}}},
	}}})
	if err != nil {
		return 0, wrap(op, err)
	}
	return int(res.DeletedCount), nil
}

// LogApps answers the ids of the apps having more than moreThan entries, sorted.
func (s *Store) LogApps(ctx context.Context, moreThan int) ([]string, error) {
	groups, err := aggregate[bucketCount[string]](ctx, s.logs, "log apps", mongo.Pipeline{
		countBy("$appId"),
		match(bson.D{{Key: "n", Value: bson.D{{Key: "$gt", Value: moreThan}}}}),
		{{Key: "$sort", Value: bson.D{{Key: "_id", Value: 1}}}},
	})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, g := range groups {
		out = append(out, g.ID)
	}
	return out, nil
}
