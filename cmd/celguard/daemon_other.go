//go:build !unix

package main

import (
	"errors"
	"os"
)

// daemonSupported says the platform has what the daemon needs: not here,
// so the hook always decides in process.
const daemonSupported = false

func startDetached(string, []string) error { return errors.New("no decision daemon on this platform") }

func lockDaemon(string) (*os.File, error) {
	return nil, errors.New("no decision daemon on this platform")
}
