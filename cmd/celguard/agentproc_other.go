//go:build !linux

package main

// agentAncestor finds no agent host among the ancestors where there is no
// /proc to walk; the environment and terminal checks still apply.
var agentAncestor = func() (prog string, pid int, ok bool) { return "", 0, false }
