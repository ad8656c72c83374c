package testenv

import (
	"os/exec"
	"syscall"
)

// DiesWithTest has the server cmd starts killed when the test process dies: a package
// that hits its timeout (or is killed) exits without running its cleanups, and a FerretDB
// or Redis left behind keeps its CPU and ports for the rest of the machine's run.
func DiesWithTest(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
