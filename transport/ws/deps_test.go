package ws

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNoGinAndNoDomain: the transport depends on neither gin nor any other package
// of Keyward (domain, actors, storage, cluster, hooks, http), as `go list -deps` shows,
// but the goroutine pool its listener runs on (internal/workpool, which imports only the
// standard library: checked here too).
func TestImportsNoGinAndNoDomain(t *testing.T) {
	const self = "github.com/keyward/keyward/transport/ws"
	const workpool = "github.com/keyward/keyward/internal/workpool"
	out, err := exec.Command("go", "list", "-deps", self).Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	deps := strings.Fields(string(out))
	if len(deps) == 0 {
		t.Fatal("go list -deps listed nothing")
	}
	var bad []string
	for _, d := range deps {
		switch {
		case d == self, d == workpool:
		case strings.Contains(d, "gin-gonic"), d == "github.com/keyward/keyward", strings.HasPrefix(d, "github.com/keyward/keyward/"):
			bad = append(bad, d)
		}
	}
	if len(bad) > 0 {
		t.Fatalf("the transport imports %s", strings.Join(bad, ", "))
	}
}
