package testenv

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// EnvFerretDBBin is the FerretDB test server binary deploy/testenv.sh built.
const EnvFerretDBBin = "KEYWARD_TEST_FERRETDB_BIN"

// StartFerretDB runs a FerretDB server of the test's own, for tests that stop, freeze or
// load it (the shared one must not be), and answers its URI and process; it is stopped
// when the test ends (woken first if the test froze it). Its files are in memory where the
// machine allows (MemDir) and it runs with GOGC=400, as deploy/testenv.sh runs the shared
// one: FerretDB's SQLite waits for the disk after every write, and at the default GOGC it
// spends about a fifth of its CPU collecting the documents it decodes.
func StartFerretDB(t testing.TB) (string, *exec.Cmd) {
	t.Helper()
	bin := os.Getenv(EnvFerretDBBin)
	if bin == "" {
		MongoURI(t) // fails or skips, as for every test needing the server
		t.Skip(EnvFerretDBBin + " is not set: run the tests through deploy/testenv.sh")
	}
	cmd := exec.Command(bin, "-listen", "127.0.0.1:0", "-dir", MemDir(t))
	cmd.Env = append(os.Environ(), "GOGC=400")
	DiesWithTest(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", bin, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	})
	uri := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		uri <- strings.TrimSpace(line)
		_, _ = io.Copy(io.Discard, out)
	}()
	select {
	case u := <-uri:
		if !strings.HasPrefix(u, "mongodb://") {
			t.Fatalf("FerretDB printed %q, not its URI", u)
		}
		return u, cmd
	case <-time.After(30 * time.Second):
		t.Fatal("FerretDB did not report its URI within 30 s")
	}
	return "", nil
}

// MemDir answers a temporary directory in memory (tmpfs /dev/shm) when the machine has
// one, else on disk; it is removed when the test ends.
func MemDir(t testing.TB) string {
	t.Helper()
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if dir, err := os.MkdirTemp("/dev/shm", "keyward-test-"); err == nil {
			t.Cleanup(func() { _ = os.RemoveAll(dir) })
			return dir
		}
	}
	return t.TempDir()
}
