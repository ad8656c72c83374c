package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/keyward/keyward/pkg/licensefile"
	"github.com/keyward/keyward/pkg/signedresponse"
)

// license runs `keyward license verify`: the check a program makes with pkg/licensefile,
// from a shell, without any server. Exit status 0 valid, 1 refused, 2 bad usage.
func license(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "verify" {
		fmt.Fprint(stderr, "usage: keyward license verify --public-key K [--hwid H] [--app-id A] FILE\n")
		return 2
	}
	fs := flag.NewFlagSet("keyward license verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	keyArg := fs.String("public-key", "", "the app's public key: base64, PEM, or @file to read it from a file")
	hwid := fs.String("hwid", "", "this machine's HWID (a file bound to another one is refused)")
	appID := fs.String("app-id", "", "the application the file must be for")
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if *keyArg == "" || fs.NArg() != 1 {
		fmt.Fprint(stderr, "usage: keyward license verify --public-key K [--hwid H] [--app-id A] FILE\n")
		return 2
	}
	keyText := *keyArg
	if path, isFile := strings.CutPrefix(keyText, "@"); isFile {
		b, err := os.ReadFile(path)
		if err != nil {
			fmt.Fprintf(stderr, "keyward: %v\n", err)
			return 2
		}
		keyText = string(b)
	}
	pub, err := signedresponse.ParsePublicKey(keyText)
	if err != nil {
		fmt.Fprintf(stderr, "keyward: %v\n", err)
		return 2
	}
	file, err := os.ReadFile(fs.Arg(0))
	if err != nil {
		fmt.Fprintf(stderr, "keyward: %v\n", err)
		return 2
	}
	p, err := licensefile.Verify(file, pub, licensefile.Options{Now: time.Now(), HWID: *hwid, AppID: *appID})
	if err != nil {
		fmt.Fprintf(stderr, "invalid: %v\n", err)
		if errors.Is(err, licensefile.ErrMalformed) || errors.Is(err, licensefile.ErrBadSignature) {
			return 1
		}
		// The signature was good: show what the file says and why it is refused.
		printPayload(stdout, p)
		return 1
	}
	fmt.Fprintln(stdout, "valid")
	printPayload(stdout, p)
	return 0
}

func printPayload(w io.Writer, p licensefile.Payload) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	_ = enc.Encode(p)
}
