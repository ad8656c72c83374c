package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// RunWithKeyward is a TestMain for packages whose tests run the real keyward program as
// separate processes: it builds cmd/keyward once into a temporary directory, hands its
// path to use, runs the tests and removes the build.
func RunWithKeyward(m *testing.M, use func(binary string)) {
	dir, err := os.MkdirTemp("", "keyward-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary := filepath.Join(dir, "keyward")
	if out, err := exec.Command("go", "build", "-o", binary, "github.com/keyward/keyward/cmd/keyward").CombinedOutput(); err != nil {
		_ = os.RemoveAll(dir)
		fmt.Fprintf(os.Stderr, "build keyward: %v\n%s", err, out)
		os.Exit(1)
	}
	use(binary)
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}
