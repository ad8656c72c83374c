package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/keyward/keyward/core/audit"
	"github.com/keyward/keyward/server"
)

// auditCmd runs `keyward audit verify`: walk every account's audit chain in the store the
// settings name and say which entry first breaks it. Exit status 0 every chain holds, 1 a
// chain is broken (each account's first broken entry is printed), 2 bad usage or the store
// cannot be read.
func auditCmd(args []string, stdout, stderr io.Writer) int {
	const use = "usage: keyward audit verify [settings of serve that name the store]\n"
	if len(args) == 0 || args[0] != "verify" {
		fmt.Fprint(stderr, use)
		return 2
	}
	cfg, exit, ok := loadConfig("keyward audit verify", args[1:], stderr)
	if !ok {
		return exit
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	store, _, err := server.OpenStore(ctx, cfg)
	if err != nil {
		fmt.Fprintf(stderr, "keyward: %v\n", err)
		return 2
	}
	defer func() { _ = store.Close() }()
	report, err := audit.Verify(ctx, store)
	if err != nil {
		fmt.Fprintf(stderr, "keyward: %v\n", err)
		return 2
	}
	for _, b := range report.Broken {
		fmt.Fprintf(stdout, "BROKEN %s\n", b)
	}
	fmt.Fprintf(stdout, "audit chains: %d accounts, %d entries checked, %d broken\n", report.Accounts, report.Entries, len(report.Broken))
	if !report.OK() {
		return 1
	}
	return 0
}
