package store

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sync"

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

	mu   sync.Mutex
	held map[string]*statedir.Locked // by session id (Hold)
}

// NewFile is the file store of a directory.
func NewFile(dir string) *File { return &File{dir: &statedir.Dir{Dir: dir}} }

// NewFileDir is the file store of a state directory as its caller
// configured it (its size cap, its cleanup age).
func NewFileDir(dir *statedir.Dir) *File { return &File{dir: dir} }

// Dir is the store's state directory.
func (f *File) Dir() *statedir.Dir { return f.dir }

// Held is a session's lock held for the whole of one event (File.Hold).
type Held struct {
	f        *File
	id       string
	ls       *statedir.Locked
	replayed []string
}

// Hold takes session id's lock for the whole of one event, waiting until
// ctx ends: a command hook decides one event of a session at a time, and
// an after-event that cannot take the lock in time is recorded for later
// (Dir.RecordPending). While it is held, the store's commits and Delete of
// the session's entry use this lock instead of taking it again. Release
// it when the event is answered.
func (f *File) Hold(ctx context.Context, id string) (*Held, error) {
	f.mu.Lock()
	_, dup := f.held[id]
	f.mu.Unlock()
	if dup {
		return nil, fmt.Errorf("the state of session %q is already held", id)
	}
	ls, err := f.dir.Lock(ctx, id)
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, dup := f.held[id]; dup {
		ls.Close()
		return nil, fmt.Errorf("the state of session %q is already held", id)
	}
	if f.held == nil {
		f.held = map[string]*statedir.Locked{}
	}
	f.held[id] = ls
	return &Held{f: f, id: id, ls: ls}, nil
}

// Pending returns the session's pending after-events (Dir.RecordPending),
// oldest first, for the holder to apply before its event; bad says which
// failed their check (they are not returned). Release(true) removes them
// all, with those that failed.
func (h *Held) Pending() (events []statedir.Pending, bad error, err error) {
	events, failed, bad, err := h.ls.Pending()
	if err != nil {
		return nil, nil, err
	}
	h.replayed = failed
	for _, ev := range events {
		h.replayed = append(h.replayed, ev.File)
	}
	return events, bad, nil
}

// Release releases the lock; applied says the pending after-events
// Pending returned were applied and the session's state written since,
// so they are removed (removing them otherwise would lose their counts,
// keeping them once applied would count them twice).
func (h *Held) Release(applied bool) error {
	h.f.mu.Lock()
	delete(h.f.held, h.id)
	h.f.mu.Unlock()
	var err error
	if applied {
		err = statedir.RemovePending(h.replayed)
	}
	return errors.Join(err, h.ls.Close())
}

// lock is the lock of an entry's file: the one held for its session
// (Hold, owned false), or one taken now.
func (f *File) lock(ctx context.Context, k state.Key) (ls *statedir.Locked, owned bool, err error) {
	if k.Scope == policy.ScopeSession {
		f.mu.Lock()
		ls := f.held[k.ID]
		f.mu.Unlock()
		if ls != nil {
			return ls, false, nil
		}
	}
	ls, err = f.dir.Lock(ctx, name(k))
	return ls, err == nil, err
}

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
	owned := make([]bool, len(ops))
	defer func() {
		for i, ls := range locked {
			if ls != nil && owned[i] {
				ls.Close()
			}
		}
	}()
	out := make([]state.Entry, len(ops))
	match := true
	for _, i := range order {
		ls, own, err := f.lock(ctx, ops[i].Key)
		if err != nil {
			return false, nil, err
		}
		locked[i], owned[i] = ls, own
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
	ls, owned, err := f.lock(ctx, key)
	if err != nil {
		return err
	}
	if owned {
		defer ls.Close()
	}
	return ls.Remove()
}

// Close implements state.Store.
func (f *File) Close() error { return nil }
