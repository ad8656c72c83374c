package doctor

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	goredis "github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"go.mongodb.org/mongo-driver/v2/bson"
	_ "modernc.org/sqlite" // the "sqlite" driver, read-only version query

	clusterredis "github.com/keyward/keyward/cluster/redis"
	"github.com/keyward/keyward/server"
	storagemongo "github.com/keyward/keyward/storage/mongo"
)

// Status is the outcome of one check.
type Status string

// The outcomes: fail makes `keyward doctor` exit 1.
const (
	OK   Status = "ok"
	Warn Status = "warn"
	Fail Status = "fail"
)

// Result is one check's line.
type Result struct {
	Check  string
	Status Status
	Detail string // what was found, and for warn and fail what to do
}

// Options bound the checks.
type Options struct {
	// Timeout bounds each network check (storage, Redis); default 5 s.
	Timeout time.Duration
	// SkewWarn is the clock skew to Redis above which the check warns; default 1 s.
	// Presence leases, rate-limit windows and the WebSocket delivery delay all mix this
	// node's clock with Redis's.
	SkewWarn time.Duration
	// Now is this node's clock; default time.Now.
	Now func() time.Time
}

func (o Options) withDefaults() Options {
	if o.Timeout <= 0 {
		o.Timeout = 5 * time.Second
	}
	if o.SkewWarn <= 0 {
		o.SkewWarn = time.Second
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Names of what the server keeps in its data dir (server/server.go).
const (
	sqliteFile     = "keyward.db"
	secretsKeyFile = "secrets.key"
	jwtSecretFile  = "jwt.secret"
)

// Run makes every check on a loaded configuration.
func Run(ctx context.Context, cfg server.Config, o Options) []Result {
	o = o.withDefaults()
	var out []Result
	out = append(out, DataDirModes(cfg.DataDir)...)
	if outbox := separateOutbox(cfg); outbox != "" {
		out = append(out, modes("mail outbox", outbox))
	}
	keyRes, keyUsable := secretsKey(cfg)
	out = append(out, keyRes, jwtSecret(cfg))
	out = append(out, storage(ctx, cfg, o, keyUsable)...)
	if cfg.RedisURL != "" {
		out = append(out, Redis(ctx, cfg.RedisURL, o)...)
	}
	return out
}

// Settings is the line of a configuration that loaded (or did not).
func Settings(cfg server.Config, err error) Result {
	if err != nil {
		return Result{"settings", Fail, strings.ReplaceAll(err.Error(), "\n", "; ") + " (fix the flag or KEYWARD_* variable named; keyward serve --help lists them)"}
	}
	storage := "embedded SQLite in " + cfg.DataDir
	if cfg.MongoURI != "" {
		storage = "MongoDB"
	}
	clusterEngine := "in-process memory (one node)"
	if cfg.RedisURL != "" {
		clusterEngine = "Redis"
	}
	return Result{"settings", OK, "loaded; storage " + storage + ", cluster engine " + clusterEngine}
}

// DataDirModes checks that the data dir and everything in it is the server user's only
// (0700 folders, 0600 files): it holds the database, the secrets and mailed links.
func DataDirModes(dir string) []Result {
	info, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return []Result{{"data dir", Warn, dir + " does not exist yet; keyward serve creates it (mode 0700) on first start"}}
	} else if err != nil {
		return []Result{{"data dir", Fail, fmt.Sprintf("cannot read %s: %v", dir, err)}}
	}
	if !info.IsDir() {
		return []Result{{"data dir", Fail, dir + " is not a folder; point --data-dir / KEYWARD_DATA_DIR at a folder"}}
	}
	return []Result{writable(dir), modes("data dir modes", dir)}
}

// separateOutbox is the mail outbox when mails go to files in a folder outside the data dir
// (it holds mailed reset and verification links, so it is kept private as well).
func separateOutbox(cfg server.Config) string {
	if cfg.SMTP.Host != "" || cfg.MailOutbox == "" {
		return ""
	}
	if rel, err := filepath.Rel(cfg.DataDir, cfg.MailOutbox); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return "" // inside the data dir: walked with it
	}
	return cfg.MailOutbox
}

// modes checks that nothing under dir is open to group or others.
func modes(check, dir string) Result {
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		return Result{check, OK, dir + " does not exist yet; keyward serve creates it (mode 0700)"}
	}
	var loose []string
	walkErr := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 || (!d.IsDir() && !d.Type().IsRegular()) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return nil // removed meanwhile
		}
		if fi.Mode().Perm()&0o077 != 0 {
			want := "0600"
			if d.IsDir() {
				want = "0700"
			}
			loose = append(loose, fmt.Sprintf("%s is %04o, want %s", p, fi.Mode().Perm(), want))
		}
		return nil
	})
	switch {
	case walkErr != nil:
		return Result{check, Fail, fmt.Sprintf("cannot walk %s: %v", dir, walkErr)}
	case len(loose) > 0:
		shown := loose
		if len(shown) > 5 {
			shown = append(shown[:5:5], fmt.Sprintf("and %d more", len(loose)-5))
		}
		return Result{check, Fail, "group or others can reach what the server keeps: " + strings.Join(shown, "; ") +
			fmt.Sprintf(" (run chmod -R go-rwx %s, or restart keyward serve, which tightens them)", dir)}
	}
	return Result{check, OK, dir + ": folders 0700, files 0600"}
}

func writable(dir string) Result {
	f, err := os.CreateTemp(dir, ".doctor-write-test-*")
	if err != nil {
		return Result{"data dir", Fail, fmt.Sprintf("%s is not writable by this user: %v (run doctor as the server's user, or chown the folder to it)", dir, err)}
	}
	_ = f.Close()
	_ = os.Remove(f.Name())
	return Result{"data dir", OK, dir + " exists and is writable"}
}

// secretsKey says where the secrets key comes from; usable is false when opening the store
// would make a new key (the stored secrets would then not open, or a fresh one would be
// written by a check that must change nothing).
func secretsKey(cfg server.Config) (Result, bool) {
	if cfg.SecretsKey != "" {
		return Result{"secrets key", OK, "configured (--secrets-key / KEYWARD_SECRETS_KEY)"}, true
	}
	path := filepath.Join(cfg.DataDir, secretsKeyFile)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if storeExists(cfg) {
			return Result{"secrets key", Fail, "none configured and " + path + " is missing, but a database exists: its stored secrets " +
				"cannot open; restore secrets.key from a backup or set KEYWARD_SECRETS_KEY to the original key"}, false
		}
		return Result{"secrets key", Warn, "none yet: keyward serve writes " + path + " on first start (back it up with the database)"}, false
	case err != nil:
		return Result{"secrets key", Fail, fmt.Sprintf("cannot read %s: %v", path, err)}, false
	case len(strings.TrimSpace(string(b))) < 32:
		return Result{"secrets key", Fail, path + " is shorter than 32 bytes; restore it from a backup"}, false
	}
	return Result{"secrets key", OK, "kept in " + path}, true
}

// jwtSecret says where the owners' token signing secret comes from. A missing kept secret
// on a node that ran before means a new one at the next start: every signed-in owner signs
// in again.
func jwtSecret(cfg server.Config) Result {
	if cfg.JWTSecret != "" {
		return Result{"jwt secret", OK, "configured (--jwt-secret / KEYWARD_JWT_SECRET)"}
	}
	path := filepath.Join(cfg.DataDir, jwtSecretFile)
	b, err := os.ReadFile(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		if storeExists(cfg) {
			return Result{"jwt secret", Warn, path + " is missing: the next start makes a new one and every signed-in owner must sign in again " +
				"(restore it from a backup to avoid that)"}
		}
		return Result{"jwt secret", OK, "none yet: keyward serve writes " + path + " on first start"}
	case err != nil:
		return Result{"jwt secret", Fail, fmt.Sprintf("cannot read %s: %v", path, err)}
	case len(strings.TrimSpace(string(b))) < 32:
		return Result{"jwt secret", Fail, path + " is shorter than 32 bytes; the server refuses it: delete it (owners sign in again) or restore it"}
	}
	return Result{"jwt secret", OK, "kept in " + path}
}

// storeExists reports whether the embedded database file is there (MongoDB: assumed).
func storeExists(cfg server.Config) bool {
	if cfg.MongoURI != "" {
		return true
	}
	_, err := os.Stat(filepath.Join(cfg.DataDir, sqliteFile))
	return err == nil
}

// storage opens the store as keyward serve does, which also proves that the secrets key
// opens the stored secrets, and reports the engine's version.
func storage(ctx context.Context, cfg server.Config, o Options, keyUsable bool) []Result {
	if cfg.MongoURI == "" && !storeExists(cfg) {
		return []Result{{"storage", OK, "no database yet in " + cfg.DataDir + "; keyward serve creates " + sqliteFile + " on first start"}}
	}
	if !keyUsable {
		return []Result{{"storage", Warn, "not opened: the secrets key is missing (see above)"}}
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	// The schema version as stored, read before OpenStore (which applies the migrations
	// this build has and the file lacks, as keyward admin's opening does).
	stored := ""
	if cfg.MongoURI == "" {
		v, err := sqliteSchema(ctx, filepath.Join(cfg.DataDir, sqliteFile))
		if err != nil {
			return []Result{{"storage", Fail, err.Error()}}
		}
		stored = v
	}
	store, desc, err := server.OpenStore(ctx, cfg)
	if err != nil {
		return []Result{{"storage", Fail, err.Error()}}
	}
	defer func() { _ = store.Close() }()
	res := []Result{{"stored secrets", OK, "the secrets key opens them"}}
	if m, ok := store.(*storagemongo.Store); ok {
		var info struct {
			Version         string `bson:"version"`
			FerretDBVersion string `bson:"ferretdbVersion"`
		}
		if err := m.Database().RunCommand(ctx, bson.D{{Key: "buildInfo", Value: 1}}).Decode(&info); err != nil {
			return append(res, Result{"storage", Fail, fmt.Sprintf("MongoDB reached but buildInfo failed: %v", err)})
		}
		v := "MongoDB " + info.Version
		if info.FerretDBVersion != "" && info.FerretDBVersion != "unknown" {
			v += " (FerretDB " + info.FerretDBVersion + ")"
		}
		return append(res, Result{"storage", OK, v + ", database " + m.Database().Name()})
	}
	path := strings.TrimPrefix(desc, "sqlite:")
	v, now, err := sqliteVersions(ctx, path)
	if err != nil {
		return append(res, Result{"storage", Fail, fmt.Sprintf("SQLite %s: %v", path, err)})
	}
	line := "SQLite " + v + " at " + path + ", schema version " + now
	if stored != now {
		line += " (migrated from " + stored + " when opened: this binary is newer than the node's last start)"
	}
	return append(res, Result{"storage", OK, line})
}

// sqliteSchema reads the schema version of the database file without writing to it.
func sqliteSchema(ctx context.Context, path string) (string, error) {
	_, v, err := sqliteVersions(ctx, path)
	if err != nil {
		return "", fmt.Errorf("SQLite at %s cannot be read: %w", path, err)
	}
	return v, nil
}

// sqliteVersions answers SQLite's version and the database's schema version (the last
// migration recorded), through a read-only connection.
func sqliteVersions(ctx context.Context, path string) (sqliteVersion, schema string, err error) {
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		return "", "", err
	}
	defer db.Close()
	if err := db.QueryRowContext(ctx, "select sqlite_version()").Scan(&sqliteVersion); err != nil {
		return "", "", err
	}
	var n sql.NullInt64
	if err := db.QueryRowContext(ctx, "select max(version) from schema_migrations").Scan(&n); err != nil {
		return "", "", fmt.Errorf("read the schema version: %w", err)
	}
	schema = "none"
	if n.Valid {
		schema = fmt.Sprint(n.Int64)
	}
	return sqliteVersion, schema, nil
}

// Redis checks the configured Redis (server, Sentinel group or cluster): it answers, its
// version, and the skew between this node's clock and Redis's TIME.
func Redis(ctx context.Context, rawURL string, o Options) []Result {
	o = o.withDefaults()
	target, err := clusterredis.ParseURL(rawURL)
	if err != nil {
		return []Result{{"redis", Fail, err.Error()}}
	}
	client := newClient(target, o.Timeout)
	defer client.Close()
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	if err := client.Ping(ctx).Err(); err != nil {
		return []Result{{"redis", Fail, fmt.Sprintf("%s does not answer: %v (check KEYWARD_REDIS_URL, the network and the Redis server)", target, err)}}
	}
	info, err := client.Info(ctx, "server").Result()
	if err != nil {
		return []Result{{"redis", Fail, fmt.Sprintf("%s answers PING but not INFO: %v", target, err)}}
	}
	version := infoField(info, "redis_version")
	res := []Result{{"redis", OK, fmt.Sprintf("%s answers, Redis %s", target, version)}}
	before := o.Now()
	remote, err := client.Time(ctx).Result()
	after := o.Now()
	if err != nil {
		return append(res, Result{"clock skew", Fail, fmt.Sprintf("TIME failed: %v", err)})
	}
	rtt := after.Sub(before)
	skew := remote.Sub(before.Add(rtt / 2))
	line := fmt.Sprintf("Redis's clock is %s from this node's (round trip %s)", signed(skew), rtt.Round(time.Microsecond))
	if skew.Abs() > o.SkewWarn {
		return append(res, Result{"clock skew", Warn, line + fmt.Sprintf("; above %s: sync both hosts with NTP (leases, rate windows and the WebSocket delay metric mix the two clocks)", o.SkewWarn)})
	}
	return append(res, Result{"clock skew", OK, line})
}

func signed(d time.Duration) string {
	d = d.Round(time.Microsecond)
	if d >= 0 {
		return "+" + d.String()
	}
	return d.String()
}

func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return "(unknown version)"
}

// newClient makes a client for the checks: short timeouts, no retries (a doctor reports,
// it does not wait out an outage).
func newClient(t clusterredis.Target, timeout time.Duration) goredis.UniversalClient {
	switch {
	case t.Cluster != nil:
		co := t.Cluster
		co.DialTimeout, co.ReadTimeout, co.WriteTimeout, co.MaxRetries = timeout, timeout, timeout, -1
		co.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
		return goredis.NewClusterClient(co)
	case t.Sentinel != nil:
		fo := t.Sentinel
		fo.DialTimeout, fo.ReadTimeout, fo.WriteTimeout, fo.MaxRetries = timeout, timeout, timeout, -1
		return goredis.NewFailoverClient(fo)
	default:
		opts := t.Server
		opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout, opts.MaxRetries = timeout, timeout, timeout, -1
		opts.MaintNotificationsConfig = &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
		return goredis.NewClient(opts)
	}
}

// Print writes one line per result and answers whether any failed.
func Print(w io.Writer, results []Result) (failed bool) {
	for _, r := range results {
		fmt.Fprintf(w, "%-4s  %-15s %s\n", r.Status, r.Check, r.Detail)
		failed = failed || r.Status == Fail
	}
	return failed
}
