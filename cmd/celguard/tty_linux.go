package main

import "syscall"

// ioctlReadTermios is the request that reads a terminal's attributes.
const ioctlReadTermios = syscall.TCGETS
