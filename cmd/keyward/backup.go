package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/keyward/keyward/core/secrets"
	"github.com/keyward/keyward/internal/backup"
	"github.com/keyward/keyward/server"
	"github.com/keyward/keyward/storage"
)

// backupCmd runs `keyward backup` (whole: a snapshot of the embedded database, the
// archive on MongoDB) and `keyward export` (always the engine-neutral archive) of the
// configured node, which may be serving meanwhile.
func backupCmd(name string, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("keyward "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "file to write (default keyward-"+name+"-<time>.tar.gz in the current folder)")
	own, rest := splitFlags(args, map[string]bool{"out": true})
	if err := fs.Parse(own); err != nil {
		return 2
	}
	cfg, exit, ok := loadConfig("keyward "+name, rest, stderr)
	if !ok {
		return exit
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	store, engine, err := server.OpenStore(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "keyward: %v\n", err)
		return 1
	}
	defer func() { _ = store.Close() }()
	b, err := server.OpenBlobs(ctx, cfg, store)
	if err != nil {
		fmt.Fprintf(stderr, "keyward: %v\n", err)
		return 1
	}
	box, err := server.SecretsBox(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "keyward: %v\n", err)
		return 1
	}
	path := *out
	if path == "" {
		path = fmt.Sprintf("keyward-%s-%s.tar.gz", name, time.Now().UTC().Format("20060102T150405Z"))
	}
	start := time.Now()
	info := backup.Info{KeywardVersion: version, Engine: strings.SplitN(engine, ":", 2)[0], Sealer: box}
	m, err := writeArchive(path, func(w io.Writer) (backup.Manifest, error) {
		if name == "export" {
			src, ok := store.(backup.Source)
			if !ok {
				return backup.Manifest{}, fmt.Errorf("store %T cannot be exported", store)
			}
			return backup.Export(ctx, src, b, w, info)
		}
		return backup.Take(ctx, store, b, w, info)
	})
	if err != nil {
		fmt.Fprintf(stderr, "keyward: %s: %v\n", name, err)
		return 1
	}
	st, _ := os.Stat(path)
	fmt.Fprintf(stdout, "wrote %s (%s, %d bytes, %d files) in %s: %s\n", path, m.Type, st.Size(), len(m.Entries)-len(m.Counts),
		time.Since(start).Round(time.Millisecond), countsLine(m.Counts))
	for _, n := range m.Notes {
		fmt.Fprintf(stdout, "note: %s\n", n)
	}
	return 0
}

// writeArchive writes to a temporary name beside path and renames it when complete, so
// a cut-short run never leaves a file that looks like a backup.
func writeArchive(path string, write func(io.Writer) (backup.Manifest, error)) (backup.Manifest, error) {
	tmp := path + ".partial"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return backup.Manifest{}, err
	}
	m, err := write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return backup.Manifest{}, err
	}
	return m, nil
}

func countsLine(counts map[string]int) string {
	var parts []string
	for _, k := range backup.KindNames() {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", k, counts[k]))
		}
	}
	return strings.Join(parts, ", ")
}

// restoreCmd runs `keyward restore FILE` and `keyward import FILE`: check the backup or
// archive, then write it into the configured store, which must be empty.
func restoreCmd(name string, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		fmt.Fprintf(stderr, "usage: keyward %s FILE [settings of serve that name the store]\n", name)
		return 2
	}
	path := args[0]
	cfg, exit, ok := loadConfig("keyward "+name, args[1:], stderr)
	if !ok {
		return exit
	}
	sealer, err := existingKey(cfg)
	if err != nil {
		fmt.Fprintf(stderr, "keyward: %s: %v\n", name, err)
		return 1
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	start := time.Now()
	m, rep, err := backup.Restore(ctx, path, backup.Target{DataDir: cfg.DataDir, MongoURI: cfg.MongoURI, MongoDatabase: cfg.MongoDatabase, Sealer: sealer})
	if err != nil {
		fmt.Fprintf(stderr, "keyward: %s refused or failed: %v\n", name, err)
		return 1
	}
	fmt.Fprintf(stdout, "restored %s (%s of Keyward %s, schema %d, made %s) in %s: %s; %d files\n", path, m.Type, m.KeywardVersion,
		m.SchemaVersion, m.CreatedAt.Format(time.RFC3339), time.Since(start).Round(time.Millisecond), countsLine(m.Counts), rep.Blobs)
	for kind, n := range rep.Skipped {
		if n > 0 {
			fmt.Fprintf(stdout, "skipped %d %s whose parent is not in the backup (written while it was taken)\n", n, kind)
		}
	}
	return 0
}

// importCmd runs `keyward import`: a Keyward archive by default, or, when the first
// argument names another source, that source's importer.
func importCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		// Importers of other servers' data: `keyward import <source> ...`. A new source is
		// one case here (the KeyAuth importer adds "keyauth").
		switch args[0] {
		case "keyauth":
			return importKeyAuth(args[1:], stdout, stderr)
		}
	}
	return restoreCmd("import", args, stdout, stderr)
}

// existingKey answers the configured secrets key, or the one in the data dir; a restore
// never makes one (a new key could not open the backup's secrets).
func existingKey(cfg server.Config) (storage.Sealer, error) {
	key := cfg.SecretsKey
	if key == "" {
		b, err := os.ReadFile(filepath.Join(cfg.DataDir, "secrets.key"))
		if err != nil {
			return nil, fmt.Errorf("no secrets key: set KEYWARD_SECRETS_KEY to the key of the node the backup came from, or copy its data dir's secrets.key into %s (%v)", cfg.DataDir, err)
		}
		key = strings.TrimSpace(string(b))
	}
	return secrets.NewBox([]byte(key))
}

// loadConfig reads the settings of serve that a store command takes (flags or KEYWARD_*
// variables). When it answers ok false the command ends with exit: 0 after --help, 2 for
// bad settings (said on stderr).
func loadConfig(name string, args []string, stderr io.Writer) (cfg server.Config, exit int, ok bool) {
	cfg, err := server.LoadConfig(name, args, os.Getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return cfg, 0, false
	} else if err != nil {
		fmt.Fprintf(stderr, "keyward: bad configuration:\n%v\n", err)
		return cfg, 2, false
	}
	return cfg, 0, true
}
