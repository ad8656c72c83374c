package main

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// keyward doctor, the real binary: ok on a data dir a node made (exit 0), then exit 1 with
// a fail line naming the path once the secrets key is readable by others.
func TestDoctorCommand(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	n := startNode(t, []string{"KEYWARD_DATA_DIR=" + dir})
	n.stop(t)
	doctor := func() (string, int) {
		cmd := exec.Command(binary, "doctor")
		cmd.Env = append(os.Environ(), "KEYWARD_DATA_DIR="+dir)
		out, err := cmd.Output()
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return string(out), exit.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		return string(out), 0
	}
	out, code := doctor()
	if code != 0 || strings.Contains(out, "fail") || strings.Contains(out, "warn") {
		t.Fatalf("doctor on a fresh node: exit %d\n%s", code, out)
	}
	for _, want := range []string{"ok    settings", "ok    data dir modes", "ok    stored secrets", "ok    storage         SQLite 3."} {
		if !strings.Contains(out, want) {
			t.Errorf("doctor output lacks %q:\n%s", want, out)
		}
	}
	key := filepath.Join(dir, "secrets.key")
	if err := os.Chmod(key, 0o640); err != nil {
		t.Fatal(err)
	}
	out, code = doctor()
	if code != 1 || !strings.Contains(out, "fail  data dir modes") || !strings.Contains(out, key+" is 0640, want 0600") {
		t.Fatalf("doctor on a loosened secrets key: exit %d\n%s", code, out)
	}
}
