//go:build !linux

package sendfile

import (
	"net"
	"os"
)

// sendFile always asks for the fallback: only Linux is a target for the
// sendfile path (ARCHITECTURE.md), and the BSD and Darwin calls differ in
// signature and in how they report partial sends.
func sendFile(net.Conn, *os.File, *span) (fallback bool) { return true }

// setCork does nothing: TCP_CORK is Linux-only (BSD's TCP_NOPUSH differs).
func setCork(net.Conn, bool) bool { return false }
