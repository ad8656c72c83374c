package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// RunWithKeyward is a TestMain for packages whose tests run the real keyward program as
// separate processes: it builds cmd/keyward, hands its path to use and runs the tests.
// Under deploy/testenv.sh the build is made once for the whole run, in its scratch
// directory (EnvScratch), by whichever test process asks first (the others wait for it):
// linking the program costs seconds of CPU, and several packages start it. Elsewhere each
// test process builds its own into a temporary directory and removes it at the end.
func RunWithKeyward(m *testing.M, use func(binary string)) {
	if scratch := os.Getenv(EnvScratch); scratch != "" {
		binary, err := sharedKeyward(scratch)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		use(binary)
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "keyward-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary := filepath.Join(dir, "keyward")
	if err := buildKeyward(binary); err != nil {
		_ = os.RemoveAll(dir)
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	use(binary)
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// sharedKeyward answers scratch/keyward, building it first unless another test process of
// the run has; an exclusive lock on scratch/keyward.lock makes the others wait for the
// build rather than start their own.
func sharedKeyward(scratch string) (string, error) {
	binary := filepath.Join(scratch, "keyward")
	lock, err := os.OpenFile(binary+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return "", fmt.Errorf("build keyward: %w", err)
	}
	defer lock.Close() // releases the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", fmt.Errorf("build keyward: lock %s: %w", lock.Name(), err)
	}
	if _, err := os.Stat(binary); err == nil {
		return binary, nil
	}
	// Built under another name and renamed: a process never sees half a binary.
	tmp := fmt.Sprintf("%s.%d", binary, os.Getpid())
	if err := buildKeyward(tmp); err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	if err := os.Rename(tmp, binary); err != nil {
		return "", fmt.Errorf("build keyward: %w", err)
	}
	return binary, nil
}

func buildKeyward(binary string) error {
	if out, err := exec.Command("go", "build", "-o", binary, "github.com/keyward/keyward/cmd/keyward").CombinedOutput(); err != nil {
		return fmt.Errorf("build keyward: %v\n%s", err, out)
	}
	return nil
}
