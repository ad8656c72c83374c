package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/keyward/keyward/internal/keyauthimport"
	"github.com/keyward/keyward/server"
	"github.com/keyward/keyward/storage"
)

const importKeyAuthUsage = `Usage: keyward import keyauth --account USERNAME [--owner KEYAUTH_OWNER] [store flags] DUMP.sql

Reads a mysqldump of a KeyAuth database (DUMP.sql, or - for standard input) into the
Keyward account USERNAME: its apps, users (who keep their passwords), license keys,
subscriptions, variables, user variables, blacklists and Discord webhooks. Prints what
was imported, what was not and why, and each app's new secret (shown once). Nothing is
written when an app name is taken or the account's plan is too small; a failed import
deletes the apps it created. Works while a server runs on the same store.
`

// importKeyAuth runs `keyward import keyauth`.
func importKeyAuth(args []string, stdout, stderr io.Writer) int {
	dumpPath, args := dumpArg(args)
	fs := flag.NewFlagSet("keyward import keyauth", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() { fmt.Fprint(stderr, importKeyAuthUsage) }
	account := fs.String("account", "", "the Keyward account (username) the apps go into")
	owner := fs.String("owner", "", "import only the apps of this KeyAuth owner (needed when the dump holds several)")
	batch := fs.Int("batch", 1000, "records per write")
	own, storeArgs := splitFlags(args, map[string]bool{"account": true, "owner": true, "batch": true, "help": true, "h": true})
	if err := fs.Parse(own); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *account == "" || dumpPath == "" {
		fmt.Fprint(stderr, importKeyAuthUsage)
		return 2
	}
	cfg, exit, ok := loadConfig("keyward import keyauth", storeArgs, stderr)
	if !ok {
		return exit
	}
	in := io.Reader(os.Stdin)
	if dumpPath != "-" {
		f, err := os.Open(dumpPath)
		if err != nil {
			fmt.Fprintf(stderr, "keyward: %v\n", err)
			return 1
		}
		defer f.Close()
		in = f
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	c, err := server.OpenCore(ctx, cfg, server.NewLogger(cfg, stderr))
	if err != nil {
		fmt.Fprintf(stderr, "keyward: %v\n", err)
		return 1
	}
	defer func() { _ = c.Close() }()
	a, err := c.Store.GetAccountByUsername(ctx, *account)
	if errors.Is(err, storage.ErrNotFound) {
		fmt.Fprintf(stderr, "keyward: no account %q (create it first: keyward admin create)\n", *account)
		return 1
	} else if err != nil {
		fmt.Fprintf(stderr, "keyward: %v\n", err)
		return 1
	}
	opt := keyauthimport.Options{AccountID: a.ID, Owner: *owner, BatchSize: *batch}
	for _, p := range c.Accounts.Plans() {
		if p.Name == a.Plan {
			opt.MaxApps, opt.MaxUsersPerApp = p.Limits.MaxApps, p.Limits.MaxUsersPerApp
		}
	}
	rep, err := keyauthimport.Import(ctx, c.Store, in, opt)
	if rep != nil {
		rep.Print(stdout)
	}
	if err != nil {
		fmt.Fprintf(stderr, "keyward: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "imported %d records into account %s\n", rep.Records(), a.Username)
	return 0
}

// dumpArg takes the dump's path out of args: the first argument that is not a flag nor a
// flag's value. Every flag but --help takes a value (the store settings are all strings).
func dumpArg(args []string) (string, []string) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "-" || !strings.HasPrefix(a, "-") {
			return a, append(args[:i:i], args[i+1:]...)
		}
		if name := strings.TrimLeft(a, "-"); !strings.Contains(name, "=") && name != "help" && name != "h" {
			i++ // its value
		}
	}
	return "", args
}
