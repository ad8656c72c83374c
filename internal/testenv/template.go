package testenv

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// EnvScratch is a directory deploy/testenv.sh makes for the test processes of its run and
// removes when the run ends (FileTemplate keeps its templates there).
const EnvScratch = "KEYWARD_TEST_SCRATCH"

// templates are the files FileTemplate built in this test process, by name. It is the
// process's cache, as the go tool's build cache is the run's: a test asks for a copy,
// never for the template itself, so no test sees another's writes.
var templates sync.Map // name → *template

type template struct {
	once sync.Once
	path string
	err  error
}

// FileTemplate writes to dst a copy of the file that build makes, building it once per
// test process: e.g. a SQLite database with every migration applied, which costs more
// under -race than the copy (storage/sqlite's conformance opens a fresh store per subtest).
// build gets a path to create; the copy is made with mode 0600. Outside deploy/testenv.sh
// (EnvScratch unset) there is nowhere to keep the template past the test, and build makes
// dst itself each time.
func FileTemplate(t testing.TB, name, dst string, build func(path string) error) {
	t.Helper()
	scratch := os.Getenv(EnvScratch)
	if scratch == "" {
		if err := build(dst); err != nil {
			t.Fatalf("build %s: %v", name, err)
		}
		return
	}
	v, _ := templates.LoadOrStore(name, &template{})
	tpl := v.(*template)
	tpl.once.Do(func() {
		dir, err := os.MkdirTemp(scratch, "template-")
		if err != nil {
			tpl.err = err
			return
		}
		tpl.path = filepath.Join(dir, filepath.Base(dst))
		tpl.err = build(tpl.path)
	})
	if tpl.err != nil {
		t.Fatalf("build the %s template: %v", name, tpl.err)
	}
	if err := copyFile(tpl.path, dst); err != nil {
		t.Fatalf("copy the %s template: %v", name, err)
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return fmt.Errorf("copy %s to %s: %w", src, dst, err)
	}
	return out.Close()
}
