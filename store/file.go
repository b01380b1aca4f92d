package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"

	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/state"
	"github.com/celguard/celguard/store/statedir"
)

// File is a store on the signed state directory the command hooks keep
// (statedir.Dir): one signed file per entry, so that a decision service on
// one machine and the command hooks share sessions. A commit locks its
// entries' files (in a fixed order), reads them, and writes them only if
// none changed; an entry's version is a digest of its state as written. A
// session's file that fails its check (changed outside celguard) is
// answered as an entry with a Fault (state.Entry): what could be read of
// it, untrusted, under a version of its own, so the evaluator restores the
// session fail-closed (eval's decide.go, rule 19) and a commit at that
// version writes a signed state over it. A shared entry's file that fails
// its check makes a commit fail, which blocks the decision
// (store_unavailable).
type File struct {
	dir *statedir.Dir
}

// NewFile is the file store of a directory.
func NewFile(dir string) *File { return &File{dir: &statedir.Dir{Dir: dir}} }

// name is the state directory's session id of an entry: a session's own
// id (the file the hooks use), or a name no session id can take for a
// shared entry.
func name(k state.Key) string {
	if k.Scope == policy.ScopeSession {
		return k.ID
	}
	return "\x00celguard-" + k.String()
}

// digest is the version of a state as written.
func digest(st []byte) string {
	sum := sha256.Sum256(st)
	return hex.EncodeToString(sum[:12])
}

// tamperedVersion is the version of a state file that failed its check,
// from what could be read of it: never a version of a signed state.
func tamperedVersion(untrusted []byte) string { return "tampered-" + digest(untrusted) }

// Commit implements state.Store.
func (f *File) Commit(ctx context.Context, ops []state.Op) (bool, []state.Entry, error) {
	order := make([]int, len(ops))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(name(ops[a].Key), name(ops[b].Key)) })
	locked := make([]*statedir.Locked, len(ops))
	defer func() {
		for _, ls := range locked {
			if ls != nil {
				ls.Close()
			}
		}
	}()
	out := make([]state.Entry, len(ops))
	match := true
	for _, i := range order {
		ls, err := f.dir.Lock(ctx, name(ops[i].Key))
		if err != nil {
			return false, nil, err
		}
		locked[i] = ls
		st, found, err := ls.Load()
		var tampered *statedir.TamperedError
		switch {
		case errors.As(err, &tampered) && ops[i].Key.Scope == policy.ScopeSession:
			out[i] = state.Entry{Version: tamperedVersion(tampered.Untrusted), State: tampered.Untrusted, Fault: tampered.Error()}
		case err != nil:
			return false, nil, err
		case found:
			out[i] = state.Entry{Version: digest(st), State: st}
		}
		if out[i].Version != ops[i].Version {
			match = false
		}
	}
	if !match {
		return false, out, nil
	}
	for i, op := range ops {
		out[i].State = nil
		if op.Write == nil {
			continue
		}
		out[i].Fault = ""
		written, err := locked[i].Save(op.Write)
		if err != nil {
			return false, nil, err
		}
		out[i].Version = digest(written)
	}
	return true, out, nil
}

// Delete implements state.Store.
func (f *File) Delete(ctx context.Context, key state.Key) error {
	ls, err := f.dir.Lock(ctx, name(key))
	if err != nil {
		return err
	}
	defer ls.Close()
	return ls.Remove()
}

// Close implements state.Store.
func (f *File) Close() error { return nil }
