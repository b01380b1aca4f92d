package replay_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/policies"
	"github.com/celguard/celguard/replay"
)

// Replay a Claude Code transcript the real host wrote against the policy
// its hooks decided with, and print each call decision.
func ExampleEngine_Replay() {
	ctx := context.Background()
	eng, err := replay.NewEngine(ctx, celguard.Config{Policies: policies.Options{Explicit: []string{"testdata/hosts/policy.yaml"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()
	// The transcript Claude Code wrote in the real-host suite's block
	// scenario: ~/.claude/projects/PROJECT/SESSION.jsonl.
	transcripts, _ := filepath.Glob("testdata/hosts/claude-code/block/*-*-*-*.jsonl")
	if len(transcripts) != 1 {
		fmt.Println("no transcript")
		return
	}
	f, err := replay.Open(transcripts[0], "")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	fmt.Println("format:", f.Format)
	_ = eng.Replay(ctx, f, func(o *replay.Outcome) error {
		switch {
		case o.ReadErr != nil:
			fmt.Println("not read:", o.ReadErr)
		case o.Event.Kind == replay.After && o.Event.NotRun != "":
			fmt.Println("after: not run:", strings.SplitN(o.Event.NotRun, ":", 2)[0])
		case o.Decided && o.Decision.Phase.HasCall():
			fmt.Printf("%s %s %v: %s by %s\n", o.Decision.Phase, o.Event.Call.Tool, o.Event.Call.Args["command"], o.Decision.Verdict, o.Decision.RuleID)
		}
		return nil
	})
	// Output:
	// format: claude-code
	// before Bash touch celguard-blocked: block by e2e-block
	// after: not run: PreToolUse
}

// Report what the policy in policies/ would do to every session under a
// directory, as a Markdown summary.
func ExampleRun() {
	ctx := context.Background()
	eng, err := replay.NewEngine(ctx, celguard.Config{Policies: policies.Options{Explicit: []string{"testdata/hosts/policy.yaml"}}})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer eng.Close()
	rep, err := replay.Run(ctx, eng, []string{"testdata/hosts/codex"}, replay.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rep.Files, "files,", rep.Calls, "calls:", rep.Verdicts)
	_ = replay.WriteMarkdown(os.Stdout, &replay.Report{Verdicts: rep.Verdicts, Files: rep.Files, Sessions: rep.Sessions, Calls: rep.Calls})
	// Output:
	// 10 files, 11 calls: map[allow:5 ask:2 block:2 modify:2]
	// ### celguard replay
	//
	// 10 files, 11 sessions, 11 calls: allow 5, modify 2, ask 2, block 2.
	//
	// **Calls the policies refuse:** none.
	//
	// **Calls the host ran that the policies refuse:** none.
}
