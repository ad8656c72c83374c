package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestImportKeyAuthCommand runs `keyward import keyauth` on the committed KeyAuth dump
// into an embedded store: refused (and nothing written) while the account's plan is too
// small, then imported, with the report printed.
func TestImportKeyAuthCommand(t *testing.T) {
	dir := t.TempDir()
	dump := "../../internal/keyauthimport/testdata/keyauth.sql"
	cmd := func(args ...string) (int, string, string) {
		var out, errOut bytes.Buffer
		code := run(append(args, "--data-dir", dir), &out, &errOut)
		return code, out.String(), errOut.String()
	}
	if code, _, errOut := cmd("admin", "create", "--username", "seller", "--email", "seller@example.com", "--password", "Seller-Pass-1"); code != 0 {
		t.Fatalf("admin create: %d %s", code, errOut)
	}
	var out, errOut bytes.Buffer
	if code := run([]string{"import", "keyauth", "--account", "seller"}, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), "Usage: keyward import keyauth") {
		t.Fatalf("without a dump: %d %s", code, errOut.String())
	}
	code, _, e := cmd("import", "keyauth", "--account", "seller", "--owner", "ann", dump)
	if code != 1 || !strings.Contains(e, "plan allows 1") || !strings.Contains(e, "nothing was written") {
		t.Fatalf("on the free plan: %d %s", code, e)
	}
	if code, _, e := cmd("import", "keyauth", "--account", "nobody", dump); code != 1 || !strings.Contains(e, `no account "nobody"`) {
		t.Fatalf("an unknown account: %d %s", code, e)
	}
	if code, _, e := cmd("admin", "set", "--username", "seller", "--plan", "pro"); code != 0 {
		t.Fatalf("admin set: %s", e)
	}
	// The dump path may come before the store flags too.
	var o, eo bytes.Buffer
	code = run([]string{"import", "keyauth", "--account", "seller", "--owner=ann", "--data-dir", dir, dump}, &o, &eo)
	if code != 0 {
		t.Fatalf("import: %d %s %s", code, o.String(), eo.String())
	}
	for _, s := range []string{`app "Cheat Loader"`, "new secret", "users           8", "not imported:", "imported 25 records into account seller"} {
		if !strings.Contains(o.String(), s) {
			t.Errorf("the output lacks %q:\n%s", s, o.String())
		}
	}
	if code, _, e := cmd("import", "keyauth", "--account", "seller", "--owner", "ann", dump); code != 1 || !strings.Contains(e, "already has an app named") {
		t.Fatalf("a second import: %d %s", code, e)
	}
}
