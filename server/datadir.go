package server

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
)

// Modes of what the server keeps on disk: the database, its WAL, the secrets, file bytes and
// mails are for the server's user only (another local user must not read a TOTP secret or a
// mailed reset link).
const (
	privateDirMode  fs.FileMode = 0o700
	privateFileMode fs.FileMode = 0o600
)

// ensureDir makes dir (mode 0700) and proves it writable, with a message an operator can
// act on.
func ensureDir(dir, what string) error {
	if err := os.MkdirAll(dir, privateDirMode); err != nil {
		return fmt.Errorf("%s %s cannot be created: %w", what, dir, err)
	}
	f, err := os.CreateTemp(dir, ".write-test-*")
	if err != nil {
		return fmt.Errorf("%s %s is not writable: %w", what, dir, err)
	}
	_ = f.Close()
	_ = os.Remove(f.Name())
	return nil
}

// securePrivateDirs creates the data dir and the mail outbox if needed, and takes away
// group and other access from them and from everything already in them (a data dir made
// by an older version, or copied in with a loose umask), logging what it changed. What the
// server creates afterwards is private from the start.
func securePrivateDirs(c Config, log *slog.Logger) error {
	// In this order: the data dir's own failure is the one to report when both fail (the
	// outbox is under it by default).
	dirs := []struct{ dir, what string }{{c.DataDir, "data dir"}}
	if c.SMTP.Host == "" && c.MailOutbox != "" && c.MailOutbox != c.DataDir {
		dirs = append(dirs, struct{ dir, what string }{c.MailOutbox, "mail outbox"})
	}
	for _, d := range dirs {
		dir, what := d.dir, d.what
		if err := ensureDir(dir, what); err != nil {
			return err
		}
		changed, err := tightenTree(dir)
		if err != nil {
			return fmt.Errorf("making %s private: %w", dir, err)
		}
		if changed > 0 {
			log.Warn("took group and other access away from files the server keeps (now 0700 folders, 0600 files)",
				"dir", dir, "changed", changed)
		}
	}
	return nil
}

// tightenTree removes group and other permission bits from root and everything under it
// (symbolic links are left alone: they are not ours), answering how many entries changed.
func tightenTree(root string) (int, error) {
	changed := 0
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && p != root {
				return nil // removed meanwhile (a temporary file)
			}
			return err
		}
		if d.Type()&fs.ModeSymlink != 0 || (!d.IsDir() && !d.Type().IsRegular()) {
			return nil
		}
		info, err := d.Info()
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		} else if err != nil {
			return err
		}
		if info.Mode().Perm()&0o077 == 0 {
			return nil
		}
		if err := os.Chmod(p, info.Mode().Perm()&0o700); err != nil {
			return err
		}
		changed++
		return nil
	})
	return changed, err
}
