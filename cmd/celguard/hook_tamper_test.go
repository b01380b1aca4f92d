package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/gob"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cel.dev/cel-go/cel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	exprpb "google.golang.org/genproto/googleapis/api/expr/v1alpha1"
	"google.golang.org/protobuf/proto"

	"github.com/celguard/celguard"
	"github.com/celguard/celguard/compile"
	"github.com/celguard/celguard/eval"
	"github.com/celguard/celguard/hooks"
	"github.com/celguard/celguard/policy"
	"github.com/celguard/celguard/store/statedir"
)

// TestHookIgnoresForgedASTCache replays the attack on the AST
// cache: after a hook has cached the checked expressions of the recommended
// bundle, every boolean expression in the cache file (the conditions of
// dangerous-commands among them) is rewritten to `false`. The forged values
// would make `rm -rf /` pass (shown by compiling from them directly); the
// hook, which checks each entry's MAC, still blocks it, and drops them.
func TestHookIgnoresForgedASTCache(t *testing.T) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("XDG_STATE_HOME", "")
	t.Chdir(t.TempDir())
	state := t.TempDir()
	event := `{"session_id":"s","cwd":"/home/user/p","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /"}}`
	hook := func() (string, int) {
		var out, errb bytes.Buffer
		p := hookParams{hookOptions: hookOptions{stateDir: state, approve: true}, timeout: 10 * time.Second,
			keepDays: 7, maxStateBytes: statedir.DefaultMaxStateBytes,
			stdio: stdio{stdin: strings.NewReader(event), stdout: &out, stderr: &errb}}
		code := runHook(context.Background(), "claude-code", p)
		return out.String(), code
	}
	out, code := hook()
	require.Equal(t, 0, code)
	require.Contains(t, out, `"permissionDecision":"deny"`)
	require.Contains(t, out, "dangerous")

	cachePath := filepath.Join(state, "ast-cache.json")
	data, err := os.ReadFile(cachePath)
	require.NoError(t, err)
	var file struct {
		Version int                          `json:"version"`
		Entries map[string]map[string][]byte `json:"entries"`
	}
	require.NoError(t, json.Unmarshal(data, &file))
	forged := &compile.MemoryASTCache{}
	n := 0
	for k, e := range file.Entries {
		if v, ok := forgeFalse(t, e["v"]); ok {
			e["v"] = v // the MAC is left as it was: the attacker has no key
			n++
		}
		forged.Put(k, e["v"])
	}
	require.Greater(t, n, 10, "boolean expressions forged")
	data, err = json.Marshal(file)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cachePath, data, 0o600))

	// Control: compiled from the forged values, rm -rf / is no longer
	// blocked, only asked (a user may approve it, or an approver).
	_, set, err := selection{}.layeredSet(everyLayer, compile.WithASTCache(forged))
	require.NoError(t, err)
	eng, err := eval.New(set, eval.WithApprover(celguard.DeferAsks))
	require.NoError(t, err)
	d, err := eng.NewSession("c", nil).Before(context.Background(), eval.Call{Tool: "Bash", Args: map[string]any{"command": "rm -rf /"}})
	require.NoError(t, err)
	require.Equal(t, policy.Ask, d.Verdict, "the forgery must be one that would change the verdict: %+v", d)

	// Without the compiled-set cache, whose record the hook would replay
	// instead (TestHookIgnoresForgedSetCache), so the AST cache is read.
	require.NoError(t, os.RemoveAll(filepath.Join(state, hooks.SetCacheDir)))
	out, code = hook()
	assert.Equal(t, 0, code)
	assert.Contains(t, out, `"permissionDecision":"deny"`, "a forged cache entry changed the verdict")
	assert.Contains(t, out, "dangerous")

	data, err = os.ReadFile(cachePath)
	require.NoError(t, err)
	assert.Zero(t, strings.Count(string(data), string(mustJSON(t, mustFalse(t)))), "the forged entries were dropped")
}

// forgeFalse replaces a cached checked expression of type bool by the
// checked expression `false`.
func forgeFalse(t *testing.T, v []byte) ([]byte, bool) {
	var pb exprpb.CheckedExpr
	if proto.Unmarshal(v, &pb) != nil || pb.GetExpr() == nil {
		return nil, false
	}
	typ := pb.GetTypeMap()[pb.GetExpr().GetId()]
	if typ.GetPrimitive() != exprpb.Type_BOOL {
		return nil, false
	}
	return mustFalse(t), true
}

func mustFalse(t *testing.T) []byte {
	env, err := cel.NewEnv()
	require.NoError(t, err)
	ast, iss := env.Compile("false")
	require.NoError(t, iss.Err())
	pb, err := cel.AstToCheckedExpr(ast)
	require.NoError(t, err)
	b, err := proto.Marshal(pb)
	require.NoError(t, err)
	return b
}

func mustJSON(t *testing.T, v any) []byte {
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return bytes.Trim(b, `"`)
}

// rmRootHook is the Claude Code hook in a fresh home and state directory
// (returned), and a call that runs it on a `rm -rf /` event and returns
// its answer.
func rmRootHook(t *testing.T) (string, func() string) {
	t.Setenv("HOME", t.TempDir())
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("XDG_STATE_HOME", "")
	t.Chdir(t.TempDir())
	state := t.TempDir()
	return state, func() string {
		var out, errb bytes.Buffer
		p := hookParams{hookOptions: hookOptions{stateDir: state}, timeout: 10 * time.Second,
			keepDays: 7, maxStateBytes: statedir.DefaultMaxStateBytes,
			stdio: stdio{stdin: strings.NewReader(`{"session_id":"s","cwd":"/srv/app","hook_event_name":"PreToolUse","tool_name":"Bash","tool_input":{"command":"rm -rf /"}}`), stdout: &out, stderr: &errb}}
		require.Equal(t, 0, runHook(context.Background(), "claude-code", p), errb.String())
		return out.String()
	}
}

// TestHookIgnoresForgedCostProofs: the cached cost proofs let programs run
// without cost accounting, so a forged entry (every program proven at the
// largest size) would lift the cost limit. Its MAC no longer checks: the
// hook computes the proofs again and writes back the true ones.
func TestHookIgnoresForgedCostProofs(t *testing.T) {
	state, hook := rmRootHook(t)
	require.Contains(t, hook(), `"permissionDecision":"deny"`)
	cachePath := filepath.Join(state, "ast-cache.json")
	read := func() (map[string]any, map[string]map[string][]byte, string) {
		data, err := os.ReadFile(cachePath)
		require.NoError(t, err)
		var file map[string]any
		require.NoError(t, json.Unmarshal(data, &file))
		var entries struct {
			Entries map[string]map[string][]byte `json:"entries"`
		}
		require.NoError(t, json.Unmarshal(data, &entries))
		for k := range entries.Entries {
			if strings.HasPrefix(k, "proofs:") {
				return file, entries.Entries, k
			}
		}
		t.Fatal("no cost proofs in the cache file")
		return nil, nil, ""
	}
	file, entries, key := read()
	good := entries[key]["v"]
	forged := []byte{}
	count := good[0] // fewer than 128 programs need accounting in the bundle
	require.Less(t, count, byte(128))
	forged = append(forged, count)
	for range count {
		forged = append(forged, 0x80, 0x20, 1) // 4096 as a uvarint, bound 1
	}
	file["entries"].(map[string]any)[key].(map[string]any)["v"] = forged
	data, err := json.Marshal(file)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(cachePath, data, 0o600))

	require.NoError(t, os.RemoveAll(filepath.Join(state, hooks.SetCacheDir))) // so the AST cache is read
	require.Contains(t, hook(), `"permissionDecision":"deny"`)
	_, entries, _ = read()
	assert.Equal(t, good, entries[key]["v"], "the forged proofs were dropped and the true ones computed again")
}

// TestHookIgnoresForgedSetCache is TestHookIgnoresForgedASTCache's attack
// on the compiled-set cache: every boolean expression of the set's record
// rewritten to `false`, and then every rule of its recorded documents
// rewritten to allow every tool. The index holds all of it, under the
// file's MAC, which the attacker cannot compute: the hook blocks `rm -rf /`
// all the same, and writes the true record again. Control: the same
// forged record under a MAC made with the state key makes the hook answer
// otherwise, so what stops it is the MAC.
func TestHookIgnoresForgedSetCache(t *testing.T) {
	state, hook := rmRootHook(t)
	require.Contains(t, hook(), `"permissionDecision":"deny"`)
	files, err := filepath.Glob(filepath.Join(state, hooks.SetCacheDir, "*.gob"))
	require.NoError(t, err)
	require.Len(t, files, 1, "the hook recorded the compiled set")
	good, err := os.ReadFile(files[0])
	require.NoError(t, err)
	file := readForgedSetFile(t, good)
	var index forgedSetIndex
	in := bytes.NewReader(file.index)
	require.NoError(t, gob.NewDecoder(in).Decode(&index))
	// The expressions follow the index's gob message.
	exprsIn := file.index[len(file.index)-in.Len():]

	// Each expression of type bool (its root's type, the first of its
	// nodes' types) becomes the literal false, of type bool, without cost
	// accounting.
	const typePrimitive = 3 // compile/settype.go
	boolType := forgedType{Op: typePrimitive, Prim: int32(exprpb.Type_BOOL)}
	index.Types = append(index.Types, boolType)
	const kindBool, hasType = 15, 0x40 // compile/setast.go
	isBool := func(a *forgedAST) bool {
		return len(a.Kinds) > 0 && a.Kinds[0]&hasType != 0 && len(a.TypeOf) > 0 &&
			index.Types[a.TypeOf[0]].Op == boolType.Op && index.Types[a.TypeOf[0]].Prim == boolType.Prim
	}
	falseAST := func(a forgedAST) forgedAST {
		return forgedAST{Kinds: []uint8{kindBool | hasType}, IDs: []int64{1}, Nums: []uint64{0},
			TypeOf: []uint32{uint32(len(index.Types) - 1)}, Syntax: a.Syntax, Location: a.Location, Lines: a.Lines}
	}
	// The expressions are one gob stream, which each program places:
	// decoded, forged and written as a new stream.
	dec := gob.NewDecoder(bytes.NewReader(exprsIn))
	require.NoError(t, dec.Decode(&forgedAST{}))
	var exprs bytes.Buffer
	enc := gob.NewEncoder(&exprs)
	require.NoError(t, enc.Encode(&forgedAST{}))
	index.ExprTypes = uint32(exprs.Len())
	put := func(a forgedAST) forgedExpr {
		off := exprs.Len()
		require.NoError(t, enc.Encode(&a))
		return forgedExpr{uint32(off), uint32(exprs.Len() - off)}
	}
	n := 0
	for i := range index.Programs {
		p := &index.Programs[i]
		var checked, planned forgedAST
		require.NoError(t, dec.Decode(&checked))
		if p.Planned.Len != 0 {
			require.NoError(t, dec.Decode(&planned))
		}
		if !isBool(&checked) {
			p.Checked = put(checked)
			if p.Planned.Len != 0 {
				p.Planned = put(planned)
			}
			continue
		}
		p.Checked, p.Planned = put(falseAST(checked)), forgedExpr{}
		p.Needs, p.FastUpTo, p.Bound = false, math.MaxUint64, 0
		n++
	}
	require.Greater(t, n, 10, "boolean expressions forged")
	var ib bytes.Buffer
	require.NoError(t, gob.NewEncoder(&ib).Encode(&index))
	ib.Write(exprs.Bytes())
	forgedIndex := ib.Bytes()

	// The MAC is left as it was: the attacker has no key.
	forged := append(bytes.Clone(file.head), forgedIndex...)
	require.NoError(t, os.WriteFile(files[0], forged, 0o600))
	assert.Contains(t, hook(), `"permissionDecision":"deny"`, "forged expressions")
	again, err := os.ReadFile(files[0])
	require.NoError(t, err)
	assert.NotEqual(t, forged, again, "the hook wrote the true record again")

	// Control: signed with the state key, the same record decides.
	key, err := statedir.LoadKey(state)
	require.NoError(t, err)
	hooks.NewSetCache(state, key, binaryIdentity()).PutSet(index.Key, forgedIndex)
	assert.NotContains(t, hook(), `"permissionDecision":"deny"`, "the forgery must be one that would change the answer")
	require.NoError(t, os.WriteFile(files[0], good, 0o600))
	require.Contains(t, hook(), `"permissionDecision":"deny"`)

	// The parsed documents are in the index too: every rule of the true
	// record rewritten to warn instead of block is not used either. (A
	// forgery to allow every tool did not decide even when signed, so it
	// showed nothing of the MAC: the control below shows this one would.)
	index = forgedSetIndex{}
	require.NoError(t, gob.NewDecoder(bytes.NewReader(file.index)).Decode(&index))
	require.NotEmpty(t, index.Sources, "the record keeps the parsed documents")
	rules := 0
	for i := range index.Sources {
		p := index.Sources[i].Doc.Policy
		if p == nil {
			continue
		}
		for j := range p.Rules {
			r := &p.Rules[j]
			r.Verdict = policy.Warn
			rules++
		}
	}
	require.Greater(t, rules, 10, "rules forged")
	ib.Reset()
	require.NoError(t, gob.NewEncoder(&ib).Encode(&index))
	ib.Write(exprsIn)
	forged = append(bytes.Clone(file.head), ib.Bytes()...)
	require.NoError(t, os.WriteFile(files[0], forged, 0o600))
	assert.Contains(t, hook(), `"permissionDecision":"deny"`, "forged rules in the recorded documents")
	again, err = os.ReadFile(files[0])
	require.NoError(t, err)
	assert.NotEqual(t, forged, again, "the hook wrote the true record again")

	// Control: signed with the state key, the forged documents decide.
	hooks.NewSetCache(state, key, binaryIdentity()).PutSet(index.Key, ib.Bytes())
	assert.NotContains(t, hook(), `"permissionDecision":"deny"`, "the forged documents must be ones that would change the answer")
}

// forgedSetFile is a file of the compiled-set cache as an attacker reads
// it (hooks.SetCache): a magic and the MAC (head), then the index.
type forgedSetFile struct {
	head, index []byte
}

func readForgedSetFile(t *testing.T, data []byte) forgedSetFile {
	t.Helper()
	const head = 8 + sha256.Size
	require.Greater(t, len(data), head)
	return forgedSetFile{head: data[:head], index: data[head:]}
}

// forgedType is an entry of the record's type table as an attacker reads
// it (compile/settype.go): its form, primitive, name and parameters.
type forgedType struct {
	Op     uint8
	Prim   int32
	Name   string
	Params []uint32
}

// forgedSetIndex is the index of a compiled-set record (compile/setcache.go)
// as an attacker decodes and encodes it (gob matches fields by name).
type forgedSetIndex struct {
	Version, Key string
	Warnings     policy.Diagnostics
	Programs     []struct {
		Text            string
		Pos             policy.Pos
		Checked         forgedExpr
		Planned         forgedExpr
		Needs           bool
		FastUpTo, Bound uint64
		Variable        bool
		TypeOf          uint32
		CwdOnly         bool
	}
	// ExprTypes ends the type definitions of the programs' expressions,
	// one gob stream of forgedASTs after the index's gob message (an
	// empty one first), which Checked and Planned place.
	ExprTypes uint32
	Strings   []string
	Types     []forgedType
	Refs      []struct {
		Name      string
		Overloads []string
	}
	// Sources are the parsed documents, which a replay reads instead of
	// the YAML.
	Sources []struct {
		Doc     policy.Document
		Layouts []struct {
			Expr int
			Runs []policy.PosRun
		}
	}
}

// forgedExpr places an expression in the expressions after the index
// (compile.setExpr).
type forgedExpr struct{ Off, Len uint32 }

// forgedAST is an expression of the record (compile.setAST).
type forgedAST struct {
	Kinds            []uint8
	IDs              []int64
	Strs, Counts     []uint32
	Nums             []uint64
	OptIdx           []int32
	Starts, Stops    []int32
	TypeOf           []uint32
	XPosIDs          []int64
	XStarts, XStop   []int32
	XTypeIDs         []int64
	XTypeOf          []uint32
	MacroIDs         []int64
	Syntax, Location uint32
	Lines            []int32
	RefIDs           []int64
	RefOf            []uint32
}
