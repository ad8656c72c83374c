package main

import (
	"bytes"
	"strings"
	"testing"
)

// TestAdminHelpListsItsFlags (issue 22): `keyward admin create --help` and `admin set --help`
// list their own flags (not only the store settings) and exit 0.
func TestAdminHelpListsItsFlags(t *testing.T) {
	for cmd, want := range map[string][]string{
		"create": {"--username", "--email", "--password", "--role"},
		"set":    {"--username", "--plan", "--role"},
	} {
		var out, errOut bytes.Buffer
		if code := admin([]string{cmd, "--help"}, &out, &errOut); code != 0 {
			t.Fatalf("admin %s --help: exit %d: %s", cmd, code, errOut.String())
		}
		for _, w := range want {
			if !strings.Contains(out.String(), w) {
				t.Errorf("admin %s --help does not list %s:\n%s", cmd, w, out.String())
			}
		}
		if cmd == "set" && strings.Contains(out.String(), "--password") {
			t.Errorf("admin set --help lists --password, which set does not take")
		}
	}
}
