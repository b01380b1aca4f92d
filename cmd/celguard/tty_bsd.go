//go:build darwin || freebsd || netbsd || openbsd || dragonfly

package main

import "syscall"

// ioctlReadTermios is the request that reads a terminal's attributes.
const ioctlReadTermios = syscall.TIOCGETA
