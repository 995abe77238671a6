package integration

import (
	"os/exec"
	"syscall"
)

// dieWithParent makes the kernel kill cmd if the test process dies first
// (a -timeout panic), so that no broker outlives its test run.
func dieWithParent(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
