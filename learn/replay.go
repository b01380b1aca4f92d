package learn

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/replay"
)

// The asks a person approved in recorded sessions (package replay reads
// the hosts' transcripts, the decision log and eval's event stream): each
// file is decided again with the policies in force (cfg), and a call the
// policies ask about that the record shows ran afterwards (its result is
// recorded, and not as refused) is one the person approved.

// ReadReplay reads the asks a person approved in the records of a file
// (its format detected), decided with cfg's policies (the zero Config
// reads every layer, as `celguard eval` does). A record the reader does
// not understand is an error at its file:line with replay's code.
func ReadReplay(ctx context.Context, path string, cfg celguard.Config) ([]Approval, string, policy.Diagnostics, error) {
	digest, err := fileDigest(path)
	if err != nil {
		return nil, "", nil, err
	}
	f, err := replay.Open(path, "")
	var re *replay.Error
	if errors.As(err, &re) && re.Code != replay.CodeUnreadable {
		return nil, digest, policy.Diagnostics{replayDiagnostic(re)}, nil
	}
	if err != nil {
		return nil, "", nil, fmt.Errorf("cannot read %s: %w", path, err)
	}
	defer f.Close()
	eng, err := replay.NewEngine(ctx, cfg)
	if err != nil {
		return nil, "", nil, err
	}
	defer eng.Close()
	var (
		apps []Approval
		ds   policy.Diagnostics
	)
	asked := map[string]Approval{}
	err = eng.Replay(ctx, f, func(o *replay.Outcome) error {
		ev := o.Event
		switch {
		case o.ReadErr != nil:
			ds = append(ds, replayDiagnostic(o.ReadErr))
		case ev.Kind == replay.Before && o.Decided && o.Err == nil && o.Decision.Verdict == policy.Ask && ev.Call.ID != "":
			asked[ev.Session+"\x00"+ev.Call.ID] = Approval{Source: FromReplay, Pos: policy.Pos{File: ev.Pos.File, Line: ev.Pos.Line, Col: 1},
				Call: Call{Tool: ev.Call.Tool, Args: ev.Call.Args, Cwd: ev.Call.Cwd}, Rule: o.Decision.RuleID}
		case ev.Kind == replay.After && ev.NotRun == "":
			key := ev.Session + "\x00" + ev.Call.ID
			if a, ok := asked[key]; ok {
				apps = append(apps, a)
				delete(asked, key)
			}
		}
		if len(asked) > maxPendingAsks {
			clear(asked) // never learnt from: they only ask again
		}
		return nil
	})
	if err != nil {
		return nil, "", nil, fmt.Errorf("replaying %s: %w", path, err)
	}
	return apps, digest, ds, nil
}

// replayDiagnostic is a record replay could not read, with its code.
func replayDiagnostic(e *replay.Error) policy.Diagnostic {
	return errorAt(policy.Code(e.Code), policy.Pos{File: e.File, Line: e.Line, Col: 1}, "%s", e.Msg)
}

// fileDigest is the sha256: digest of a file, read as a stream.
func fileDigest(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("cannot read %s: %w", path, err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("cannot read %s: %w", path, err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}
