package storagetest

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/keyward/keyward/storage"
)

// EnvBigLogBench opts in to BenchLogsAtScale: seeding a million entries takes minutes, so
// `make bench` skips it unless KEYWARD_BIG_LOG_BENCH=1.
const EnvBigLogBench = "KEYWARD_BIG_LOG_BENCH"

// Scale of BenchLogsAtScale.
const (
	benchLogEntries = 1_000_000
	benchLogBatch   = 1000 // entries per InsertLogs, as the log writer sends at most
	benchLogDays    = 30
)

// benchEvents are the event names of the seeded entries with their weights (of 100) and
// levels, roughly what a busy application logs.
var benchEvents = []struct {
	name   string
	weight int
	level  string
}{
	{"user.login", 40, levelInfo},
	{"session.init", 20, levelDebug},
	{"user.login_failed", 10, levelWarning},
	{"token.validate", 8, levelInfo},
	{"license.activate", 5, levelInfo},
	{"file.download", 5, levelInfo},
	{"user.register", 4, levelInfo},
	{"variable.update", 3, levelInfo},
	{"app.update", 2, levelInfo},
	{"rule.triggered", 2, levelError},
	{"session.end", 1, levelCritical},
}

var benchCountries = []string{"US", "DE", "GB", "FR", "NL", "BR", "IN", "JP", "CA", "AU",
	"ES", "IT", "PL", "SE", "TR", "RU", "CN", "KR", "MX", "ZA"}

// benchEntry makes the i-th seeded entry. Entries are spread evenly over the 30 days up to
// now and come in time order, give or take one step, as a live log's do; their ids are
// random and UUID-shaped, like the log writer's, so inserts hit the id index at random
// places as they do in production.
func benchEntry(rng *rand.Rand, appID string, now time.Time, i int) storage.LogEntry {
	w := rng.IntN(100)
	ev := benchEvents[len(benchEvents)-1]
	for _, e := range benchEvents {
		if w < e.weight {
			ev = e
			break
		}
		w -= e.weight
	}
	country := ""
	if rng.IntN(10) > 0 { // a tenth is unknown
		country = benchCountries[rng.IntN(len(benchCountries))]
	}
	user := rng.IntN(5000)
	data := ""
	if rng.IntN(4) == 0 {
		data = fmt.Sprintf(`{"build":%d,"os":"windows"}`, rng.IntN(100))
	}
	step := int64(benchLogDays*24*time.Hour) / benchLogEntries
	at := now.Add(-benchLogDays * 24 * time.Hour).Add(time.Duration(int64(i)*step + 1 + rng.Int64N(step)))
	return storage.LogEntry{
		ID:        fmt.Sprintf("%08x-%04x-4%03x-a%03x-%012x", rng.Uint32(), rng.Uint32()&0xffff, rng.Uint32()&0xfff, rng.Uint32()&0xfff, rng.Uint64()&0xffffffffffff),
		AppID:     appID,
		Event:     ev.name,
		Message:   ev.name + " by user" + fmt.Sprint(user),
		Username:  fmt.Sprintf("user%04d", user),
		IP:        fmt.Sprintf("198.51.%d.%d", rng.IntN(256), rng.IntN(256)),
		Country:   country,
		Level:     ev.level,
		Data:      data,
		CreatedAt: storage.Truncate(at),
	}
}

// BenchLogsAtScale seeds a million log entries of one app spread over 30 days, in bulk
// inserts of 1000, and times the log queries the dashboard runs on them, each as a
// sub-benchmark reporting ms/op. It skips unless EnvBigLogBench is "1"; newStore is called
// only then.
func BenchLogsAtScale(b *testing.B, newStore func(b *testing.B) storage.Store) {
	if os.Getenv(EnvBigLogBench) != "1" {
		b.Skipf("set %s=1 to seed %d log entries and time the log queries on them", EnvBigLogBench, benchLogEntries)
	}
	s := newStore(b)
	ctx := b.Context()
	now := storage.Now()
	app := fullApp("acc-bench", "bench")
	if err := s.CreateApp(ctx, app); err != nil {
		b.Fatalf("CreateApp: %v", err)
	}

	rng := rand.New(rand.NewPCG(2024, 3))
	start := time.Now()
	batch := make([]storage.LogEntry, benchLogBatch)
	for i := 0; i < benchLogEntries/benchLogBatch; i++ {
		for j := range batch {
			batch[j] = benchEntry(rng, app.ID, now, i*benchLogBatch+j)
		}
		if err := s.InsertLogs(ctx, batch); err != nil {
			b.Fatalf("InsertLogs (batch %d): %v", i, err)
		}
	}
	took := time.Since(start)
	b.Logf("seeded %d entries in %v (%.0f entries/s, %.1f ms per InsertLogs of %d)", benchLogEntries, took.Round(time.Second),
		benchLogEntries/took.Seconds(), took.Seconds()*1000/float64(benchLogEntries/benchLogBatch), benchLogBatch)

	// The aggregations must see the whole set, or the timings measure the wrong thing.
	day, month := now.Add(-24*time.Hour), now.Add(-benchLogDays*24*time.Hour)
	if st, err := s.LogStats(ctx, app.ID, month); err != nil || st.Total != benchLogEntries {
		b.Fatalf("LogStats(30 days) = (total %d, %v), want %d", st.Total, err, benchLogEntries)
	}

	cases := []struct {
		name string
		run  func() error
	}{
		{"LogStats/24h", func() error { _, err := s.LogStats(ctx, app.ID, day); return err }},
		{"LogStats/30d", func() error { _, err := s.LogStats(ctx, app.ID, month); return err }},
		{"LogSeries/24h-hourly", func() error { _, err := s.LogSeries(ctx, app.ID, "user.login", day, true); return err }},
		{"LogSeries/30d-daily", func() error { _, err := s.LogSeries(ctx, app.ID, "user.login", month, false); return err }},
		{"LogCountries/30d", func() error { _, err := s.LogCountries(ctx, app.ID, month); return err }},
		{"ListLogs/first-page", func() error { _, _, err := s.ListLogs(ctx, app.ID, storage.LogQuery{}); return err }},
		{"ListLogs/first-page-event", func() error {
			_, _, err := s.ListLogs(ctx, app.ID, storage.LogQuery{Event: "user.login_failed"})
			return err
		}},
		{"LogEvents", func() error { _, err := s.LogEvents(ctx, app.ID); return err }},
		{"CountLogs/24h", func() error { _, err := s.CountLogs(ctx, app.ID, "user.login", day); return err }},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if err := c.run(); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/op")
		})
	}
}
