// Command ferretdb runs an embedded FerretDB (MongoDB wire protocol) server
// backed by SQLite files. It exists only for Keyward's tests: deploy/testenv.sh
// builds it and starts one instance, and cluster tests can start more through
// $KEYWARD_TEST_FERRETDB_BIN.
//
// Usage:
//
//	ferretdb -listen 127.0.0.1:27017 -dir /tmp/ferretdb-data
//
// Once the listener is up, the server's MongoDB URI (for example
// "mongodb://127.0.0.1:27017/") is printed as one line on stdout; with
// "-listen 127.0.0.1:0" that line tells the port that was picked.
// It logs to stderr at warn level and stops cleanly on SIGINT or SIGTERM.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/FerretDB/FerretDB/ferretdb"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:27017", "TCP address to listen on (port 0 picks a free one)")
	dir := flag.String("dir", "", "directory for the SQLite backend files (required; created if missing)")
	flag.Parse()

	if err := run(*listen, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "ferretdb:", err)
		os.Exit(1)
	}
}

func run(listen, dir string) error {
	if dir == "" {
		return fmt.Errorf("-dir is required")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return err
	}

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	slog.SetDefault(logger)

	f, err := ferretdb.New(&ferretdb.Config{
		Listener:  ferretdb.ListenerConfig{TCP: listen},
		Logger:    logger,
		Handler:   "sqlite",
		SQLiteURL: "file:" + filepath.ToSlash(abs) + "/",
	})
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	go func() {
		// MongoDBURI blocks until Run has opened the listener.
		fmt.Println(f.MongoDBURI())
	}()

	return f.Run(ctx)
}
