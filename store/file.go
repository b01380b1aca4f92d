package store

import (
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
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

	mu    sync.Mutex
	held  map[string]*Held     // by session id (Hold)
	paths map[state.Key]string // shared entries' files (absent)
	// versions is the last state of each entry this store wrote or read,
	// with its version: a state read again with the same bytes has the
	// same digest, which is not computed again.
	versions      map[state.Key]knownVersion
	versionsBytes int
}

// maxVersionsBytes bounds the states File.versions keeps.
const maxVersionsBytes = 8 << 20

// knownVersion is a state's bytes and their version (digest).
type knownVersion struct {
	state   []byte
	version string
}

// version is the version of st, entry k's state as written or read.
func (f *File) version(k state.Key, st []byte) string {
	f.mu.Lock()
	kv, ok := f.versions[k]
	f.mu.Unlock()
	if ok && bytes.Equal(kv.state, st) {
		return kv.version
	}
	v := digest(st)
	f.mu.Lock()
	defer f.mu.Unlock()
	if old, ok := f.versions[k]; ok {
		f.versionsBytes -= len(old.state)
	}
	if f.versions == nil || len(f.versions) >= maxPaths || f.versionsBytes+len(st) > maxVersionsBytes {
		f.versions, f.versionsBytes = map[state.Key]knownVersion{}, 0
	}
	if len(st) <= maxVersionsBytes {
		f.versions[k] = knownVersion{state: st, version: v}
		f.versionsBytes += len(st)
	}
	return v
}

// NewFile is the file store of a directory.
func NewFile(dir string) *File { return &File{dir: &statedir.Dir{Dir: dir}} }

// NewFileDir is the file store of a state directory as its caller
// configured it (its size cap, its cleanup age): the store of the command
// hook (celguard.Config.Store), and of any process that decides the hook's
// sessions in its place.
func NewFileDir(dir *statedir.Dir) *File { return &File{dir: dir} }

// Dir is the store's state directory.
func (f *File) Dir() *statedir.Dir { return f.dir }

// Held is a session's lock held for the whole of one event (File.Hold).
type Held struct {
	f  *File
	id string
	ls *statedir.Locked
	// done is closed at Release: a Hold of the same session in this
	// process waits for it.
	done chan struct{}
	// failed are the pending files that failed their check (Pending).
	failed []string

	// mu is held by a commit of the session's entry from its read to its
	// write. seen is the entry as the hold last read or wrote it (nil
	// before the first read): while the lock is held no other process
	// writes the file, so a commit takes the entry from here instead of
	// reading and checking the file again.
	mu   sync.Mutex
	seen *state.Entry
}

// Hold takes session id's lock for the whole of one event, waiting until
// ctx ends: a command hook decides one event of a session at a time, and
// an after-event that cannot take the lock in time is recorded for later
// (Dir.RecordPending). While it is held, the store's commits and Delete of
// the session's entry use this lock instead of taking it again, and read
// the file once. A second Hold of the session in this process waits for
// the first's Release, as another process does. Release it when the
// event is answered.
func (f *File) Hold(ctx context.Context, id string) (*Held, error) {
	h := &Held{f: f, id: id, done: make(chan struct{})}
	for {
		f.mu.Lock()
		cur := f.held[id]
		if cur == nil {
			if f.held == nil {
				f.held = map[string]*Held{}
			}
			f.held[id] = h
			f.mu.Unlock()
			break
		}
		f.mu.Unlock()
		select {
		case <-cur.done:
		case <-ctx.Done():
			return nil, fmt.Errorf("cannot lock the state of session %q: it is held in this process: %w", id, ctx.Err())
		}
	}
	ls, err := f.dir.Lock(ctx, id)
	if err != nil {
		f.unhold(h)
		return nil, err
	}
	h.mu.Lock()
	h.ls = ls
	h.mu.Unlock()
	return h, nil
}

// unhold forgets the hold h and wakes who waits for it.
func (f *File) unhold(h *Held) {
	f.mu.Lock()
	delete(f.held, h.id)
	f.mu.Unlock()
	close(h.done)
}

// Pending returns the session's pending after-events (Dir.RecordPending),
// oldest first, for the holder to apply before its event, each removed
// with Applied once its counts are committed; bad says which failed their
// check (they are not returned, and Release(true) removes them).
func (h *Held) Pending() (events []statedir.Pending, bad error, err error) {
	events, failed, bad, err := h.ls.Pending()
	if err != nil {
		return nil, nil, err
	}
	h.failed = failed
	return events, bad, nil
}

// Applied removes a pending after-event whose counts were committed:
// keeping it would count it twice.
func (h *Held) Applied(ev statedir.Pending) error {
	return statedir.RemovePending([]string{ev.File})
}

// Release releases the lock; ok says the event was answered, so the
// pending files that failed their check (Pending) are removed too.
func (h *Held) Release(ok bool) error {
	var err error
	if ok {
		err = statedir.RemovePending(h.failed)
	}
	h.mu.Lock()
	err = errors.Join(err, h.ls.Close())
	h.mu.Unlock()
	h.f.unhold(h)
	return err
}

// lock is the lock of an entry's file: the one held for its session
// (Hold; h is the hold, whose mu the caller then holds until it calls
// unlock), or one taken now (owned).
func (f *File) lock(ctx context.Context, k state.Key) (ls *statedir.Locked, h *Held, err error) {
	if k.Scope == policy.ScopeSession {
		f.mu.Lock()
		h = f.held[k.ID]
		f.mu.Unlock()
		if h != nil {
			h.mu.Lock()
			if h.ls != nil {
				return h.ls, h, nil
			}
			h.mu.Unlock() // being taken: the file lock waits for it
		}
	}
	ls, err = f.dir.Lock(ctx, name(k))
	return ls, nil, err
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
	holds := make([]*Held, len(ops))
	defer func() {
		for i, ls := range locked {
			switch {
			case holds[i] != nil:
				holds[i].mu.Unlock()
			case ls != nil:
				ls.Close()
			}
		}
	}()
	out := make([]state.Entry, len(ops))
	match := true
	for _, i := range order {
		if f.absent(ops[i]) {
			// Only checked, and there is none: nothing to lock.
			if ops[i].Version != "" {
				match = false
			}
			continue
		}
		ls, h, err := f.lock(ctx, ops[i].Key)
		if err != nil {
			return false, nil, err
		}
		locked[i], holds[i] = ls, h
		if h != nil && h.seen != nil {
			out[i] = *h.seen
		} else {
			if out[i], err = f.load(ls, ops[i].Key); err != nil {
				return false, nil, err
			}
			if h != nil {
				seen := out[i]
				h.seen = &seen
			}
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
			if holds[i] != nil {
				holds[i].seen = nil // read the file again
			}
			return false, nil, err
		}
		out[i].Version = f.version(op.Key, written)
		if holds[i] != nil {
			holds[i].seen = &state.Entry{Version: out[i].Version, State: written}
		}
	}
	return true, out, nil
}

// absent reports whether op only checks a shared entry (an agent's,
// repository's or organisation's: a decision checks them all for a fleet
// halt) that has no file: the check needs no lock, since a commit that
// reads an entry and writes none of it is the same as one made before the
// entry was first written. Every decision of a hook checks three such
// entries, which rarely exist.
func (f *File) absent(op state.Op) bool {
	if op.Write != nil || op.Key.Scope == policy.ScopeSession {
		return false
	}
	f.mu.Lock()
	path, ok := f.paths[op.Key]
	if !ok {
		if f.paths == nil || len(f.paths) >= maxPaths {
			f.paths = map[state.Key]string{}
		}
		path = f.dir.Path(name(op.Key))
		f.paths[op.Key] = path
	}
	f.mu.Unlock()
	_, err := os.Lstat(path)
	return errors.Is(err, fs.ErrNotExist)
}

// maxPaths bounds the shared entries' file names a File remembers.
const maxPaths = 1024

// load reads an entry's file under its lock. A session's file that
// fails its check is an entry with a Fault; a shared entry's is an error.
func (f *File) load(ls *statedir.Locked, k state.Key) (state.Entry, error) {
	st, found, err := ls.Load()
	var tampered *statedir.TamperedError
	switch {
	case errors.As(err, &tampered) && k.Scope == policy.ScopeSession:
		return state.Entry{Version: tamperedVersion(tampered.Untrusted), State: tampered.Untrusted, Fault: tampered.Error()}, nil
	case err != nil:
		return state.Entry{}, err
	case found:
		return state.Entry{Version: f.version(k, st), State: st}, nil
	}
	return state.Entry{}, nil
}

// Delete implements state.Store.
func (f *File) Delete(ctx context.Context, key state.Key) error {
	ls, h, err := f.lock(ctx, key)
	if err != nil {
		return err
	}
	if h != nil {
		defer h.mu.Unlock()
		h.seen = nil
	} else {
		defer ls.Close()
	}
	return ls.Remove()
}

// Close implements state.Store.
func (f *File) Close() error { return nil }
