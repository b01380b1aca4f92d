package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"

	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/policy"
)

// File is a store on the hook state files (hooks.Store): one signed file
// per entry in a directory, so that a decision service on one machine and
// the command hooks share sessions. A commit locks its entries' files (in
// a fixed order), reads them, and writes them only if none changed; an
// entry's version is a digest of its state. A file that fails its check
// (changed outside celguard) makes a commit fail, which blocks the
// decision (store_unavailable): the hooks restore such a session
// fail-closed themselves.
type File struct {
	hs *hooks.Store
}

// NewFile is the file store of a directory.
func NewFile(dir string) *File { return &File{hs: &hooks.Store{Dir: dir}} }

// name is the hooks session id of an entry: a session's own id (the file
// the hooks use), or a name no session id can take for a shared entry.
func name(k eval.StateKey) string {
	if k.Scope == policy.ScopeSession {
		return k.ID
	}
	return "\x00celguard-" + k.String()
}

func digest(st eval.SessionState) (string, error) {
	b, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:12]), nil
}

// Commit implements eval.Store.
func (f *File) Commit(ctx context.Context, ops []eval.StoreOp) (bool, []eval.StoreEntry, error) {
	order := make([]int, len(ops))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(name(ops[a].Key), name(ops[b].Key)) })
	locked := make([]*hooks.LockedState, len(ops))
	defer func() {
		for _, ls := range locked {
			if ls != nil {
				ls.Close()
			}
		}
	}()
	out := make([]eval.StoreEntry, len(ops))
	match := true
	for _, i := range order {
		ls, err := f.hs.Lock(ctx, name(ops[i].Key))
		if err != nil {
			return false, nil, err
		}
		locked[i] = ls
		st, found, err := ls.Load()
		if err != nil {
			return false, nil, err
		}
		if found {
			v, err := digest(st)
			if err != nil {
				return false, nil, err
			}
			out[i] = eval.StoreEntry{Version: v, State: &st}
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
		w := *op.Write
		w.ID = name(op.Key)
		if err := locked[i].Save(w); err != nil {
			return false, nil, err
		}
		v, err := digest(w)
		if err != nil {
			return false, nil, err
		}
		out[i].Version = v
	}
	return true, out, nil
}

// Delete implements eval.Store.
func (f *File) Delete(ctx context.Context, key eval.StateKey) error {
	ls, err := f.hs.Lock(ctx, name(key))
	if err != nil {
		return err
	}
	defer ls.Close()
	return ls.Remove()
}

// Close implements eval.Store.
func (f *File) Close() error { return nil }
