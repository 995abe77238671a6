//go:build !linux

package integration

import "os/exec"

// dieWithParent is Linux-only (Pdeathsig); elsewhere the cleanup's
// SIGTERM and SIGKILL have to do.
func dieWithParent(*exec.Cmd) {}
