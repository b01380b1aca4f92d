//go:build !unix

package main

import "os"

// relaySignal does nothing where processes do not end by signals.
func relaySignal(*os.ProcessState) {}
