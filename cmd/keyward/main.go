// Command keyward is the Keyward server binary: `keyward serve` runs a node (its ready log
// line names the dashboard's URL), `keyward admin create|set` manages accounts in the
// configured store (also while a server runs on it; --help lists each one's flags),
// `keyward audit verify` checks the audit hash chains, `keyward doctor` checks a node's
// settings and engines, `keyward license verify` checks an offline license file against an
// app's public key, `keyward import keyauth` reads a KeyAuth database dump into an account
// (import_keyauth.go; the work is in internal/keyauthimport), and `keyward version` prints
// the build. It holds no logic of its own: everything is in package server and the core
// packages.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/google/uuid"
	"github.com/keyward/keyward/core/accounts"
	"github.com/keyward/keyward/server"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

const usage = `Keyward: self-hosted authentication and licensing server.

Usage:
  keyward serve [flags]          run a node (keyward serve --help lists every setting)
  keyward admin create [flags]   create a verified account: --username --email --password [--role admin]
  keyward admin set [flags]      change an account: --username [--plan free|pro|business] [--role user|admin]
  keyward license verify --public-key K [--hwid H] [--app-id A] FILE
                                 verify an offline license file, offline (K: base64, PEM, or @file)
  keyward audit verify [flags]   check every account's audit chain; names the first broken entry
                                 of each (exit 1 when one is broken)
  keyward doctor [flags]         check this node's settings, data dir modes, secrets key, storage
                                 and Redis (versions, clock skew); one line per check, exit 1 on a fail
  keyward backup [--out FILE]    back up the running node: the embedded database (VACUUM INTO),
                                 its files and a manifest with counts and SHA-256; on MongoDB the archive
  keyward restore FILE           check a backup (checksums, counts, the secrets key) and restore it
                                 into the configured empty data dir or MongoDB database
  keyward export [--out FILE]    write the engine-neutral archive (JSON lines per record kind, files)
  keyward import FILE            read an archive into the configured empty store (SQLite or MongoDB)
  keyward import keyauth --account USERNAME DUMP.sql
                                 read a KeyAuth database dump (mysqldump) into the account's apps;
                                 prints what was imported, what was not and why
  keyward version                print the version

The admin, audit, doctor, backup, restore, export and import commands read the same settings as serve (flags or KEYWARD_* variables) to find the store.
`

func main() {
	// Version 4 UUIDs (request, socket and event ids: three per socket opened) take their
	// randomness from a buffer refilled from crypto/rand 16 ids at a time, rather than a
	// getrandom(2) each. It is process-wide, so it is set here, before anything runs.
	uuid.EnableRandPool()
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "serve":
		return serve(args[1:], stderr)
	case "admin":
		return admin(args[1:], stdout, stderr)
	case "license":
		return license(args[1:], stdout, stderr)
	case "audit":
		return auditCmd(args[1:], stdout, stderr)
	case "doctor":
		return doctorCmd(args[1:], stdout, stderr)
	case "backup", "export":
		return backupCmd(args[0], args[1:], stdout, stderr)
	case "restore":
		return restoreCmd("restore", args[1:], stdout, stderr)
	case "import":
		return importCmd(args[1:], stdout, stderr)
	case "version", "--version", "-v":
		fmt.Fprintln(stdout, "keyward", version)
		return 0
	case "help", "--help", "-h":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "keyward: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}

func serve(args []string, stderr io.Writer) int {
	cfg, err := server.LoadConfig("keyward serve", args, os.Getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		fmt.Fprintf(stderr, "keyward: bad configuration:\n%v\n", err)
		return 2
	}
	cfg.Version = version
	log := server.NewLogger(cfg, stderr)
	slog.SetDefault(log)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	srv, err := server.New(ctx, cfg, log)
	if err != nil {
		log.Error("keyward cannot start", "err", err)
		return 1
	}
	if err := srv.Run(ctx); err != nil {
		log.Error("keyward stopped with an error", "err", err)
		return 1
	}
	return 0
}

func admin(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || (args[0] != "create" && args[0] != "set") {
		fmt.Fprint(stderr, usage)
		return 2
	}
	cmd := args[0]
	// The command's own flags first, then everything else is store configuration.
	fs := flag.NewFlagSet("keyward admin "+cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	username := fs.String("username", "", "account username")
	email := fs.String("email", "", "account email (create)")
	password := fs.String("password", "", "account password (create)")
	role := fs.String("role", "", "role: user or admin")
	plan := fs.String("plan", "", "plan: free, pro or business (set)")
	own, storeArgs := splitFlags(args[1:], map[string]bool{"username": true, "email": true, "password": true, "role": true, "plan": true})
	for _, a := range storeArgs {
		if a == "-h" || a == "-help" || a == "--help" || a == "--h" {
			adminHelp(cmd, fs, stdout)
			return 0
		}
	}
	if err := fs.Parse(own); err != nil {
		return 2
	}
	cfg, err := server.LoadConfig("keyward admin "+cmd, storeArgs, os.Getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		fmt.Fprintf(stderr, "keyward: bad configuration:\n%v\n", err)
		return 2
	}
	log := server.NewLogger(cfg, stderr)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := server.OpenCore(ctx, cfg, log)
	if err != nil {
		fmt.Fprintf(stderr, "keyward: %v\n", err)
		return 1
	}
	defer func() { _ = c.Close() }()
	switch cmd {
	case "create":
		a, err := c.Accounts.CreateAccount(ctx, accounts.CreateInput{Username: *username, Email: *email, Password: *password, Role: *role})
		if err != nil {
			fmt.Fprintf(stderr, "keyward: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "created account %s (%s, role %s, plan %s)\n", a.Username, a.ID, a.Role, a.Plan)
	case "set":
		if *username == "" {
			fmt.Fprintln(stderr, "keyward: --username is required")
			return 2
		}
		var change accounts.Change
		if *plan != "" {
			change.Plan = plan
		}
		if *role != "" {
			change.Role = role
		}
		v, err := c.Accounts.ChangeAccountByUsername(ctx, *username, change)
		if err != nil {
			fmt.Fprintf(stderr, "keyward: %v\n", err)
			return 1
		}
		fmt.Fprintf(stdout, "account %s: role %s, plan %s\n", v.Account.Username, v.Account.Role, v.Plan.Name)
	}
	return 0
}

// adminHelp prints the command's own flags, then where the store settings come from.
func adminHelp(cmd string, fs *flag.FlagSet, w io.Writer) {
	if cmd == "create" {
		fmt.Fprintln(w, "Usage: keyward admin create --username NAME --email ADDRESS --password PASSWORD [--role admin] [store settings]")
		fmt.Fprintln(w, "Creates a verified account (no mail is sent).")
	} else {
		fmt.Fprintln(w, "Usage: keyward admin set --username NAME [--plan free|pro|business] [--role user|admin] [store settings]")
		fmt.Fprintln(w, "Changes an account's plan or role.")
	}
	fmt.Fprintln(w, "\nFlags:")
	fs.SetOutput(w)
	fs.VisitAll(func(f *flag.Flag) {
		if cmd == "create" && f.Name == "plan" || cmd == "set" && (f.Name == "email" || f.Name == "password") {
			return
		}
		fmt.Fprintf(w, "  --%s\t%s\n", f.Name, f.Usage)
	})
	fmt.Fprintln(w, "\nStore settings are those of keyward serve (--data-dir, --mongo-uri, --secrets-key, ... or their KEYWARD_* variables):")
	fmt.Fprintln(w, "the command opens the same store the server uses. See keyward serve --help.")
}

// splitFlags separates the flags named in own (as -name value, --name value or
// --name=value) from the rest, keeping order within each part.
func splitFlags(args []string, own map[string]bool) (mine, rest []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		name := a
		for len(name) > 0 && name[0] == '-' {
			name = name[1:]
		}
		key, _, hasValue := strings.Cut(name, "=")
		if a == name || !own[key] {
			rest = append(rest, a)
			continue
		}
		mine = append(mine, a)
		if !hasValue && i+1 < len(args) {
			mine = append(mine, args[i+1])
			i++
		}
	}
	return mine, rest
}
