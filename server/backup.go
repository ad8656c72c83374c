package server

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/keyward/keyward/internal/backup"
	"github.com/keyward/keyward/storage"
	"github.com/keyward/keyward/storage/blobs"
)

// kindBackups is the supervised goroutine of scheduled backups.
const kindBackups = "backups"

// BackupConfig says where and how often the node backs itself up.
type BackupConfig struct {
	// Every is the interval of scheduled backups; 0 takes them only when an admin asks.
	Every  time.Duration
	Keep   int
	MaxAge time.Duration
	// Dir is the folder backups go to when no S3 bucket is set (default <data dir>/backups).
	Dir string
	S3  backup.S3Config
}

func backupOptions() []*option {
	return []*option{
		{flag: "backup-every", env: "KEYWARD_BACKUP_EVERY", def: "0", usage: "take a backup this often (e.g. 24h); 0 for none but those an admin takes from the dashboard. In a cluster set it on one node: every node backs up the same database"},
		{flag: "backup-keep", env: "KEYWARD_BACKUP_KEEP", def: "7", usage: "backups kept (the oldest go first; 0 keeps all)"},
		{flag: "backup-max-age", env: "KEYWARD_BACKUP_MAX_AGE", def: "0", usage: "backups older than this are removed (0 for any age); the newest is always kept"},
		{flag: "backup-dir", env: "KEYWARD_BACKUP_DIR", usage: "folder of the backups when no S3 bucket is set (default <data dir>/backups)"},
		{flag: "backup-s3-endpoint", env: "KEYWARD_BACKUP_S3_ENDPOINT", usage: "S3-compatible endpoint (host[:port], e.g. s3.eu-central-1.amazonaws.com); with a bucket, backups go there"},
		{flag: "backup-s3-bucket", env: "KEYWARD_BACKUP_S3_BUCKET", usage: "bucket of the backups"},
		{flag: "backup-s3-prefix", env: "KEYWARD_BACKUP_S3_PREFIX", usage: "folder in the bucket, e.g. keyward/"},
		{flag: "backup-s3-region", env: "KEYWARD_BACKUP_S3_REGION", usage: "region of the bucket"},
		{flag: "backup-s3-access-key", env: "KEYWARD_BACKUP_S3_ACCESS_KEY", usage: "access key id"},
		{flag: "backup-s3-secret-key", env: "KEYWARD_BACKUP_S3_SECRET_KEY", usage: "secret access key"},
		{flag: "backup-s3-insecure", env: "KEYWARD_BACKUP_S3_INSECURE", def: "false", usage: "talk plain HTTP to the endpoint (a bucket on a private network)"},
	}
}

func parseBackup(v map[string]string, errs []error) (BackupConfig, []error) {
	var b BackupConfig
	for _, d := range []struct {
		name string
		to   *time.Duration
	}{{"backup-every", &b.Every}, {"backup-max-age", &b.MaxAge}} {
		x, err := time.ParseDuration(v[d.name])
		if err != nil || x < 0 {
			errs = append(errs, fmt.Errorf("--%s: %q is not a duration (0 for none)", d.name, v[d.name]))
		}
		*d.to = x
	}
	if b.Every > 0 && b.Every < time.Minute {
		errs = append(errs, fmt.Errorf("--backup-every must be at least 1m"))
	}
	keep, err := strconv.Atoi(v["backup-keep"])
	if err != nil || keep < 0 {
		errs = append(errs, fmt.Errorf("--backup-keep: %q is not a count (0 keeps all)", v["backup-keep"]))
	}
	b.Keep = keep
	b.Dir = v["backup-dir"]
	if b.Dir == "" {
		b.Dir = filepath.Join(v["data-dir"], "backups")
	}
	insecure, err := strconv.ParseBool(v["backup-s3-insecure"])
	if err != nil {
		errs = append(errs, fmt.Errorf("--backup-s3-insecure: %q is not true or false", v["backup-s3-insecure"]))
	}
	b.S3 = backup.S3Config{Endpoint: v["backup-s3-endpoint"], Bucket: v["backup-s3-bucket"], Prefix: v["backup-s3-prefix"],
		Region: v["backup-s3-region"], AccessKey: v["backup-s3-access-key"], SecretKey: v["backup-s3-secret-key"], Insecure: insecure}
	if (b.S3.Endpoint == "") != (b.S3.Bucket == "") {
		errs = append(errs, fmt.Errorf("--backup-s3-endpoint and --backup-s3-bucket go together"))
	}
	if strings.Contains(b.S3.Endpoint, "://") {
		errs = append(errs, fmt.Errorf("--backup-s3-endpoint: %q: give host[:port], no scheme (--backup-s3-insecure for plain HTTP)", b.S3.Endpoint))
	}
	return b, errs
}

// newBackups builds the node's backup scheduler (Server starts its schedule).
func newBackups(c Config, store storage.Store, b blobs.Store, reg prometheus.Registerer, log *slog.Logger, version string) (*backup.Scheduler, error) {
	var dest backup.Destination = backup.Folder{Dir: c.Backup.Dir}
	if c.Backup.S3.Bucket != "" {
		s3, err := backup.NewS3(c.Backup.S3)
		if err != nil {
			return nil, err
		}
		dest = s3
	}
	engine := "sqlite"
	if c.MongoURI != "" {
		engine = "mongo"
	}
	box, err := secretsBox(c)
	if err != nil {
		return nil, err
	}
	return backup.NewScheduler(backup.SchedulerConfig{Store: store, Blobs: b, Dest: dest, Every: c.Backup.Every,
		Retention: backup.Retention{Keep: c.Backup.Keep, MaxAge: c.Backup.MaxAge},
		Info:      backup.Info{KeywardVersion: version, Engine: engine, Sealer: box}, Log: log.With("part", "backups"), Metrics: reg})
}

// SecretsBox answers the node's secrets key (configured or kept in the data dir), for the
// key check of `keyward backup` and `export`.
func SecretsBox(c Config) (storage.Sealer, error) { return secretsBox(c) }

// OpenBlobs opens where the configured node keeps file bytes (GridFS next to a MongoDB
// store, <data dir>/files otherwise), for `keyward backup` and `export`.
func OpenBlobs(ctx context.Context, c Config, store storage.Store) (blobs.Store, error) {
	return openBlobs(ctx, c, store)
}
