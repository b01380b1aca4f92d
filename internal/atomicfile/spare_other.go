//go:build !linux

package atomicfile

import (
	"errors"
	"os"
)

// errNoExchange says the platform cannot exchange two names atomically.
var errNoExchange = errors.New("atomicfile: no atomic exchange on this platform")

func exchange(a, b string) error { return errNoExchange }

func overwrite(spare string, data []byte, perm os.FileMode) error { return errNoExchange }
