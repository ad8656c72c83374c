package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/keyward/keyward/storage"
)

var _ storage.LogStore = (*Store)(nil)

// logCols is the column order of scanLog.
const logCols = `id, app_id, event, message, username, ip, country, level, data, created_at`

func scanLog(row scanner) (storage.LogEntry, error) {
	var e storage.LogEntry
	err := row.Scan(&e.ID, &e.AppID, &e.Event, &e.Message, &e.Username, &e.IP, &e.Country, &e.Level, &e.Data,
		timeCol{&e.CreatedAt})
	return e, err
}

// Bucket widths of LogSeries, in milliseconds.
const (
	hourMillis = int64(time.Hour / time.Millisecond)
	dayMillis  = 24 * hourMillis
)

// logDeleteChunk bounds the rows one delete statement of the log sweeps removes, so that a
// sweep of millions of entries lets other writers in between its transactions.
const logDeleteChunk = 10_000

// InsertLogs writes the batch with one prepared statement in one transaction. The app is
// not checked (a hot path); DeleteApp sweeps the entries of a deleted app.
func (s *Store) InsertLogs(ctx context.Context, entries []storage.LogEntry) error {
	rows := make([][]any, len(entries))
	for i, e := range entries {
		rows[i] = []any{e.ID, e.AppID, e.Event, e.Message, e.Username, strings.ToLower(e.Username), e.IP, e.Country,
			e.Level, e.Data, toMillis(e.CreatedAt)}
	}
	// One row a statement: a statement of several rows (tried: 16) needs SQLite's
	// statement journal, which spills to a temporary file past 64 KiB of pages, and was
	// slower (35.7 against 19-20 us a row, BenchmarkInsertLogs).
	return s.insertAll(ctx, "insert logs", `INSERT INTO logs (id, app_id, event, message, username, username_lower,
	ip, country, level, data, created_at) VALUES (`+placeholders(11)+`)`, rows)
}

// since adds an inclusive lower bound on created_at; the zero time means none.
func (w *where) since(t time.Time) {
	if !t.IsZero() {
		w.add("created_at >= ?", t.UnixMilli())
	}
}

// appEvent selects the app's entries of the event ("" for every event) since the instant.
func appEvent(appID, event string, since time.Time) where {
	var w where
	w.add("app_id = ?", appID)
	if event != "" {
		w.add("event = ?", event)
	}
	w.since(since)
	return w
}

// ListLogs answers one page of the app's entries matching q, newest first, and their total.
func (s *Store) ListLogs(ctx context.Context, appID string, q storage.LogQuery) ([]storage.LogEntry, int, error) {
	var w where
	w.add("app_id = ?", appID)
	if q.Event != "" {
		w.add("event = ?", q.Event)
	}
	if q.Level != "" {
		w.add("level = ?", q.Level)
	}
	w.search(q.Username, "username_lower")
	w.since(q.Start)
	if !q.End.IsZero() {
		w.add("created_at <= ?", q.End.UnixMilli())
	}
	return listPage(ctx, s, "list logs", "logs", logCols, w, orderBy("created_at", true), q.Page, scanLog)
}

// sinceMillis is the lower bound of an aggregation in column form; the zero time means
// none, the smallest value.
func sinceMillis(t time.Time) int64 {
	if t.IsZero() {
		return math.MinInt64
	}
	return t.UnixMilli()
}

// keyCount is the count of the entries with one value of a column.
type keyCount struct {
	key string
	n   int
}

// countPerKey counts the app's entries created at or after since (unix milliseconds) per
// distinct value of col (event, level or country), leaving out values without any. It is
// a skip-scan of the index on (app_id, col, created_at): the recursive part seeks from one
// value to the next (one seek per distinct value, however many entries share it), and each
// value's count reads only its entries in the window. A GROUP BY would sort every entry of
// the window instead. With skipEmpty the value "" is left out too.
func countPerKey(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, col, appID string, since int64, skipEmpty bool) ([]keyCount, error) {
	first := `SELECT min(` + col + `) FROM logs WHERE app_id = ?1`
	if skipEmpty {
		first += ` AND ` + col + ` > ''`
	}
	rows, err := q.QueryContext(ctx, `WITH RECURSIVE k(v) AS (
	`+first+`
	UNION ALL
	SELECT (SELECT min(`+col+`) FROM logs WHERE app_id = ?1 AND `+col+` > k.v) FROM k WHERE k.v IS NOT NULL
)
SELECT v, (SELECT count(*) FROM logs WHERE app_id = ?1 AND `+col+` = k.v AND created_at >= ?2) FROM k WHERE v IS NOT NULL`,
		appID, since)
	if err != nil {
		return nil, err
	}
	all, err := scanAll(rows, func(row scanner) (keyCount, error) {
		var c keyCount
		return c, row.Scan(&c.key, &c.n)
	})
	return slices.DeleteFunc(all, func(c keyCount) bool { return c.n == 0 }), err
}

// LogStats counts the app's entries since the instant per event and per level (see
// countPerKey), both in one snapshot; the total is the sum per level.
func (s *Store) LogStats(ctx context.Context, appID string, since time.Time) (storage.LogStats, error) {
	const op = "log stats"
	st := storage.LogStats{ByLevel: map[string]int{}, ByEvent: map[string]int{}}
	err := s.inReadTx(ctx, op, func(tx *sql.Tx) error {
		for _, by := range []struct {
			col string
			m   map[string]int
		}{{"event", st.ByEvent}, {"level", st.ByLevel}} {
			counts, err := countPerKey(ctx, tx, by.col, appID, sinceMillis(since), false)
			if err != nil {
				return wrap(op+": per "+by.col, err)
			}
			for _, c := range counts {
				by.m[c.key] = c.n
			}
		}
		return nil
	})
	if err != nil {
		return storage.LogStats{}, err
	}
	for _, n := range st.ByLevel {
		st.Total += n
	}
	return st, nil
}

// LogEvents answers the app's distinct event names, sorted, skipping through the index
// from one name to the next (see countPerKey) rather than reading every entry of the app.
func (s *Store) LogEvents(ctx context.Context, appID string) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `WITH RECURSIVE k(v) AS (
	SELECT min(event) FROM logs WHERE app_id = ?1
	UNION ALL
	SELECT (SELECT min(event) FROM logs WHERE app_id = ?1 AND event > k.v) FROM k WHERE k.v IS NOT NULL
)
SELECT v FROM k WHERE v IS NOT NULL ORDER BY v`, appID)
	if err != nil {
		return nil, wrap("log events", err)
	}
	out, err := scanAll(rows, func(row scanner) (string, error) {
		var e string
		return e, row.Scan(&e)
	})
	if err != nil {
		return nil, wrap("log events", err)
	}
	return out, nil
}

// CountLogs counts the app's entries of the event ("" for every event) since the instant,
// from one index range.
func (s *Store) CountLogs(ctx context.Context, appID, event string, since time.Time) (int, error) {
	w := appEvent(appID, event, since)
	return s.countWhere(ctx, "count logs", "logs", w.sql(), w.args...)
}

// LogSeries counts the app's entries of the event ("" for every event) per UTC hour or day
// from since on. Like countPerKey it skips through the index rather than grouping: each
// step seeks the first entry at or after the end of the bucket before, floors its time to
// its bucket's start (floored, so that an instant before 1970 falls in its own bucket),
// and counts the bucket's range. Empty buckets cost nothing, and nothing is sorted.
func (s *Store) LogSeries(ctx context.Context, appID, event string, since time.Time, hourly bool) ([]storage.Bucket, error) {
	const op = "log series"
	width := dayMillis
	if hourly {
		width = hourMillis
	}
	cond := `app_id = ?1`
	args := []any{appID, sinceMillis(since), width}
	if event != "" {
		cond += ` AND event = ?4`
		args = append(args, event)
	}
	floor := func(x string) string { return `(` + x + ` - ((` + x + ` % ?3) + ?3) % ?3)` }
	rows, err := s.r.QueryContext(ctx, `WITH RECURSIVE b(start) AS (
	SELECT `+floor(`(SELECT min(created_at) FROM logs WHERE `+cond+` AND created_at >= ?2)`)+`
	UNION ALL
	SELECT `+floor(`(SELECT min(created_at) FROM logs WHERE `+cond+` AND created_at >= b.start + ?3)`)+` FROM b WHERE b.start IS NOT NULL
)
SELECT start, (SELECT count(*) FROM logs WHERE `+cond+` AND created_at >= max(b.start, ?2) AND created_at < b.start + ?3)
FROM b WHERE start IS NOT NULL ORDER BY start`, args...)
	if err != nil {
		return nil, wrap(op, err)
	}
	out, err := scanAll(rows, func(row scanner) (storage.Bucket, error) {
		var (
			b     storage.Bucket
			start int64
		)
		err := row.Scan(&start, &b.Count)
		b.Start = time.UnixMilli(start).UTC()
		return b, err
	})
	if err != nil {
		return nil, wrap(op, err)
	}
	return out, nil
}

// LogCountries counts the app's entries of each known country since the instant (see
// countPerKey), most first, ties by country code.
func (s *Store) LogCountries(ctx context.Context, appID string, since time.Time) ([]storage.CountryCount, error) {
	counts, err := countPerKey(ctx, s.r, "country", appID, sinceMillis(since), true)
	if err != nil {
		return nil, wrap("log countries", err)
	}
	// A few hundred rows at most, already aggregated.
	slices.SortFunc(counts, func(a, b keyCount) int { return cmp.Or(b.n-a.n, strings.Compare(a.key, b.key)) })
	var out []storage.CountryCount
	for _, c := range counts {
		out = append(out, storage.CountryCount{Country: c.key, Count: c.n})
	}
	return out, nil
}

// deleteLogsChunked removes the entries matching w in transactions of at most
// logDeleteChunk rows each, answering how many went.
func (s *Store) deleteLogsChunked(ctx context.Context, op string, w where) (int, error) {
	total := 0
	for {
		n, err := execCount(ctx, s.w, `DELETE FROM logs WHERE rowid IN (SELECT rowid FROM logs WHERE `+w.sql()+` LIMIT ?)`,
			append(w.args, logDeleteChunk)...)
		if err != nil {
			return total, wrap(op, err)
		}
		total += n
		if n < logDeleteChunk {
			return total, nil
		}
	}
}

// DeleteLogsBefore removes the app's entries (every app's when appID is "") created before
// the instant, answering how many. Every app's go app by app, each from its range of the
// logs_app_created index; the apps are found by skipping through that index.
func (s *Store) DeleteLogsBefore(ctx context.Context, appID string, before time.Time) (int, error) {
	const op = "delete logs before"
	apps := []string{appID}
	if appID == "" {
		rows, err := s.r.QueryContext(ctx, `WITH RECURSIVE k(v) AS (
	SELECT min(app_id) FROM logs
	UNION ALL
	SELECT (SELECT min(app_id) FROM logs WHERE app_id > k.v) FROM k WHERE k.v IS NOT NULL
)
SELECT v FROM k WHERE v IS NOT NULL`)
		if err != nil {
			return 0, wrap(op, err)
		}
		if apps, err = scanAll(rows, func(row scanner) (string, error) {
			var id string
			return id, row.Scan(&id)
		}); err != nil {
			return 0, wrap(op, err)
		}
	}
	total := 0
	for _, app := range apps {
		var w where
		w.add("app_id = ?", app)
		w.add("created_at < ?", before.UnixMilli())
		n, err := s.deleteLogsChunked(ctx, op, w)
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// TrimLogs keeps the app's newest keep entries (by created_at, then id) and removes the
// rest: the entry at position keep of the newest-first order is the newest to go, and it
// and everything older are deleted.
func (s *Store) TrimLogs(ctx context.Context, appID string, keep int) (int, error) {
	const op = "trim logs"
	var (
		at int64
		id string
	)
	err := s.r.QueryRowContext(ctx, `SELECT created_at, id FROM logs WHERE app_id = ?
ORDER BY `+orderBy("created_at", true)+` LIMIT 1 OFFSET ?`, appID, max(keep, 0)).Scan(&at, &id)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil // keep entries or fewer
	}
	if err != nil {
		return 0, wrap(op, err)
	}
	var w where
	w.add("app_id = ?", appID)
	w.add("(created_at, id) <= (?, ?)", at, id)
	return s.deleteLogsChunked(ctx, op, w)
}

// LogApps answers the ids of the apps having more than moreThan entries, sorted.
func (s *Store) LogApps(ctx context.Context, moreThan int) ([]string, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT app_id FROM logs GROUP BY app_id HAVING count(*) > ? ORDER BY app_id`, moreThan)
	if err != nil {
		return nil, wrap("log apps", err)
	}
	out, err := scanAll(rows, func(row scanner) (string, error) {
		var id string
		return id, row.Scan(&id)
	})
	if err != nil {
		return nil, wrap("log apps", err)
	}
	return out, nil
}
