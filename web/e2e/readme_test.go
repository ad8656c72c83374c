package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadmeFirstHour runs the README's first-hour curl block as printed against a fresh
// server: only its address (http://localhost:8080) and its data folder (data/outbox) are
// this test's. The block must end with a license key signed in.
func TestReadmeFirstHour(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, found := strings.Cut(string(raw), "<!-- first-hour: TestReadmeFirstHour runs this block -->\n```sh\n")
	if !found {
		t.Fatal("README.md has no first-hour block")
	}
	script, _, found := strings.Cut(after, "\n```")
	if !found {
		t.Fatal("the first-hour block does not end")
	}
	if !strings.Contains(script, "KW=http://localhost:8080") || !strings.Contains(script, "data/outbox") {
		t.Fatal("the block no longer names the default address and data folder")
	}
	n := startNode(t)
	script = strings.ReplaceAll(script, "http://localhost:8080", n.url)
	script = strings.ReplaceAll(script, "data/outbox", filepath.Join(n.dataDir, "outbox"))
	out, err := exec.Command("bash", "-euo", "pipefail", "-c", script).CombinedOutput()
	if err != nil {
		t.Fatalf("the first-hour block failed: %v\n%s", err, out)
	}
	last := strings.TrimSpace(string(out))
	if i := strings.LastIndex(last, "\n"); i >= 0 {
		last = last[i+1:]
	}
	if !strings.Contains(last, `"success":true`) || !strings.Contains(last, `"username"`) {
		t.Fatalf("the license login did not succeed; the block printed:\n%s", out)
	}
}
