package judge

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"strings"
)

// runCommand runs argv with in on stdin and returns its stdout (at most
// 1 MiB); the context's end kills it.
func runCommand(ctx context.Context, argv []string, in []byte) ([]byte, error) {
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Stdin = bytes.NewReader(in)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &limited{w: &out, n: 1 << 20}, &limited{w: &errb, n: 4096}
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, fmt.Errorf("%s: %v: %s", argv[0], err, strings.TrimSpace(errb.String()))
	}
	return out.Bytes(), nil
}

// limited keeps at most n bytes written to it and drops the rest.
type limited struct {
	w *bytes.Buffer
	n int
}

func (l *limited) Write(p []byte) (int, error) {
	if room := l.n - l.w.Len(); room > 0 {
		if len(p) > room {
			l.w.Write(p[:room])
		} else {
			l.w.Write(p)
		}
	}
	return len(p), nil
}
