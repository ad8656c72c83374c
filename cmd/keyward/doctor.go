package main

import (
	"context"
	"errors"
	"flag"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/keyward/keyward/internal/doctor"
	"github.com/keyward/keyward/server"
)

// doctorCmd checks the node the settings describe (the same flags and KEYWARD_* variables
// as serve) and prints one line per check; exit 1 when one fails.
func doctorCmd(args []string, stdout, stderr io.Writer) int {
	cfg, err := server.LoadConfig("keyward doctor", args, os.Getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	results := []doctor.Result{doctor.Settings(cfg, err)}
	if err == nil {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		results = append(results, doctor.Run(ctx, cfg, doctor.Options{})...)
	}
	if doctor.Print(stdout, results) {
		return 1
	}
	return 0
}
