package eval

import (
	"context"
	"testing"
	"time"

	"github.com/celguard/celguard/internal/deadline"
)

type otherKey struct{}

// TestNotesContextIsWithValue: the notes are found through the context
// withNotes gives and through contexts derived from it; every other value,
// the deadline, Done and Err are the parent's, as with context.WithValue.
func TestNotesContextIsWithValue(t *testing.T) {
	s := &Session{eng: &Engine{cfg: config{sink: Tee{}}}}
	parent, cancel := context.WithCancel(context.WithValue(context.Background(), otherKey{}, "v"))
	dl := time.Now().Add(time.Hour)
	dctx := deadline.New(parent, dl)
	ctx, n := s.withNotes(dctx)
	if n == nil || notesOf(ctx) != n {
		t.Fatalf("notesOf(withNotes) = %p, want %p", notesOf(ctx), n)
	}
	child, stop := context.WithCancel(ctx)
	defer stop()
	if notesOf(child) != n {
		t.Fatal("a derived context lost the notes")
	}
	if ctx.Value(otherKey{}) != "v" || child.Value(otherKey{}) != "v" {
		t.Fatal("the parent's values are not passed through")
	}
	if d, ok := ctx.Deadline(); !ok || !d.Equal(dl) {
		t.Fatalf("Deadline %v %v, want %v", d, ok, dl)
	}
	if ctx.Err() != nil || child.Err() != nil {
		t.Fatal("ended before its parent")
	}
	cancel()
	<-child.Done()
	if ctx.Err() == nil || child.Err() == nil {
		t.Fatal("the parent's end is not seen")
	}
	if notesOf(context.Background()) != nil {
		t.Fatal("notes without withNotes")
	}
	// Without a sink, nothing is noted and ctx is unchanged.
	s.eng.cfg.sink = nil
	if c, n := s.withNotes(dctx); c != context.Context(dctx) || n != nil {
		t.Fatal("withNotes without a sink changed the context")
	}
}
