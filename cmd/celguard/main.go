// Command celguard decides AI-agent tool calls against celguard policies and
// checks policy files.
//
// The commands live in this package as cobra commands built by newRootCmd;
// run is the entry point tests call with their own stdin, stdout and
// stderr. Only main exits.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
