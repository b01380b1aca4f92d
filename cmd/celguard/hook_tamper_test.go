package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"cel.dev/cel-go/cel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	exprpb "google.golang.org/genproto/googleapis/api/expr/v1alpha1"
	"google.golang.org/protobuf/encoding/protowire"
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
// rewritten to `false`, first with the index left as it was (its MAC
// checks, the expressions' SHA-256 do not), then with an index naming the
// forged expressions (its MAC does not check). The hook blocks `rm -rf /`
// all the same, and writes the true record again.
func TestHookIgnoresForgedSetCache(t *testing.T) {
	state, hook := rmRootHook(t)
	require.Contains(t, hook(), `"permissionDecision":"deny"`)
	files, err := filepath.Glob(filepath.Join(state, hooks.SetCacheDir, "*.gob"))
	require.NoError(t, err)
	require.Len(t, files, 1, "the hook recorded the compiled set")
	// The file and its index, as an attacker decodes them (gob matches
	// fields by name): a magic, the MAC, the header's length, the header
	// (the index and the blobs' sizes, under the MAC) and the blobs.
	var file forgedSetFile
	type typeMap struct {
		IDs, RefIDs []int64
		Of, RefOf   []uint32
	}
	var index struct {
		Version, Key string
		Warnings     policy.Diagnostics
		Programs     []struct {
			Text                       string
			Pos                        policy.Pos
			Checked, Planned           int
			CheckedSum, PlannedSum     [32]byte
			CheckedTypes, PlannedTypes typeMap
			Needs                      bool
			FastUpTo, Bound            uint64
			Variable                   bool
			Type                       []byte
			CwdOnly                    bool
		}
		Types [][]byte
		Refs  []struct {
			Name      string
			Overloads []string
		}
		// Sources are the parsed documents, which a replay reads instead
		// of the YAML.
		Sources []struct {
			Doc     policy.Document
			Layouts []struct {
				Expr int
				Runs []policy.PosRun
			}
		}
	}
	good, err := os.ReadFile(files[0])
	require.NoError(t, err)
	file.read(t, good)
	require.NoError(t, gob.NewDecoder(bytes.NewReader(file.Index)).Decode(&index))
	// A blob carries no type map: the index's tables say which
	// expressions are booleans. Each is forged to the constant false, its
	// type map with it (the type bool added to the index's types).
	boolType, err := proto.Marshal(&exprpb.Type{TypeKind: &exprpb.Type_Primitive{Primitive: exprpb.Type_BOOL}})
	require.NoError(t, err)
	index.Types = append(index.Types, boolType)
	falseExpr := mustFalse(t)
	var falsePB exprpb.CheckedExpr
	require.NoError(t, proto.Unmarshal(falseExpr, &falsePB))
	falseTypes := typeMap{IDs: []int64{falsePB.GetExpr().GetId()}, Of: []uint32{uint32(len(index.Types) - 1)}}
	falsePB.TypeMap = nil
	falseBlob, err := proto.Marshal(&falsePB)
	require.NoError(t, err)
	isBool := func(blob []byte, tm typeMap) bool {
		var pb exprpb.CheckedExpr
		if proto.Unmarshal(blob, &pb) != nil || pb.GetExpr() == nil {
			return false
		}
		for k, id := range tm.IDs {
			var typ exprpb.Type
			if id == pb.GetExpr().GetId() && proto.Unmarshal(index.Types[tm.Of[k]], &typ) == nil {
				return typ.GetPrimitive() == exprpb.Type_BOOL
			}
		}
		return false
	}
	// The blobs' sizes are under the MAC: a forged blob keeps the size of
	// the one it replaces (padded with an unknown protobuf field), so that
	// the MAC checks and only the expressions' SHA-256 do not.
	n := 0
	forge := func(i int, tm *typeMap) bool {
		if !isBool(file.Blobs[i], *tm) {
			return false
		}
		padded := padProto(falseBlob, len(file.Blobs[i]))
		if padded == nil {
			return false
		}
		file.Blobs[i], *tm = padded, falseTypes
		return true
	}
	for i := range index.Programs {
		p := &index.Programs[i]
		if forge(p.Checked, &p.CheckedTypes) {
			n++
		}
		if p.Planned >= 0 {
			forge(p.Planned, &p.PlannedTypes)
		}
	}
	require.Greater(t, n, 10, "boolean expressions forged")
	write := func() []byte {
		b := file.encode()
		require.NoError(t, os.WriteFile(files[0], b, 0o600))
		return b
	}
	write()
	assert.Contains(t, hook(), `"permissionDecision":"deny"`, "forged expressions under the true index")

	for i := range index.Programs {
		p := &index.Programs[i]
		p.CheckedSum = sha256.Sum256(file.Blobs[p.Checked])
		if p.Planned >= 0 {
			p.PlannedSum = sha256.Sum256(file.Blobs[p.Planned])
		}
	}
	var ib bytes.Buffer
	require.NoError(t, gob.NewEncoder(&ib).Encode(&index))
	file.Index = ib.Bytes() // the MAC is left as it was: the attacker has no key
	file.Sizes = nil        // and the blobs' sizes are the forged ones
	forged := write()
	assert.Contains(t, hook(), `"permissionDecision":"deny"`, "forged expressions under a forged index")
	again, err := os.ReadFile(files[0])
	require.NoError(t, err)
	assert.NotEqual(t, forged, again, "the hook wrote the true record again")
	assert.Contains(t, hook(), `"permissionDecision":"deny"`)

	// The parsed documents are in the index, under its MAC: every rule of
	// the true record rewritten to allow every tool first, whatever the
	// call (verdict, tools, priority, condition), is not used either.
	file = forgedSetFile{}
	index.Sources = nil
	file.read(t, again)
	require.NoError(t, gob.NewDecoder(bytes.NewReader(file.Index)).Decode(&index))
	require.NotEmpty(t, index.Sources, "the record keeps the parsed documents")
	rules := 0
	for i := range index.Sources {
		p := index.Sources[i].Doc.Policy
		if p == nil {
			continue
		}
		for j := range p.Rules {
			r := &p.Rules[j]
			r.Verdict, r.Tools, r.Classes, r.Priority = policy.Allow, []policy.String{{Value: "*"}}, nil, 1<<20
			if r.Condition != nil {
				r.Condition.Text = "true"
			}
			rules++
		}
	}
	require.Greater(t, rules, 10, "rules forged")
	ib.Reset()
	require.NoError(t, gob.NewEncoder(&ib).Encode(&index))
	file.Index = ib.Bytes()
	forged = write()
	assert.Contains(t, hook(), `"permissionDecision":"deny"`, "forged rules in the recorded documents")
	again, err = os.ReadFile(files[0])
	require.NoError(t, err)
	assert.NotEqual(t, forged, again, "the hook wrote the true record again")
}

// forgedSetFile is a file of the compiled-set cache as an attacker reads
// and writes it (hooks.SetCache): a magic, the MAC, the header's length as
// a big-endian uint32, the header (the gob of the index and the blobs'
// sizes, under the MAC) and the blobs.
type forgedSetFile struct {
	magic, MAC []byte
	Index      []byte
	Sizes      []int
	Blobs      [][]byte
}

// read decodes data into f.
func (f *forgedSetFile) read(t *testing.T, data []byte) {
	t.Helper()
	const magic = 8
	require.Greater(t, len(data), magic+sha256.Size+4)
	f.magic, f.MAC = data[:magic], data[magic:magic+sha256.Size]
	n := int(binary.BigEndian.Uint32(data[magic+sha256.Size:]))
	header := data[magic+sha256.Size+4:]
	var h struct {
		Index []byte
		Sizes []int
	}
	require.NoError(t, gob.NewDecoder(bytes.NewReader(header[:n])).Decode(&h))
	f.Index, f.Sizes = h.Index, h.Sizes
	rest := header[n:]
	f.Blobs = nil
	for _, size := range f.Sizes {
		f.Blobs, rest = append(f.Blobs, bytes.Clone(rest[:size])), rest[size:]
	}
	require.Empty(t, rest)
}

// encode is f's file, with f.Sizes the blobs' own sizes when nil.
func (f *forgedSetFile) encode() []byte {
	sizes := f.Sizes
	if sizes == nil {
		for _, b := range f.Blobs {
			sizes = append(sizes, len(b))
		}
	}
	var header bytes.Buffer
	if err := gob.NewEncoder(&header).Encode(struct {
		Index []byte
		Sizes []int
	}{f.Index, sizes}); err != nil {
		panic(err)
	}
	out := append(bytes.Clone(f.magic), f.MAC...)
	out = binary.BigEndian.AppendUint32(out, uint32(header.Len()))
	out = append(out, header.Bytes()...)
	for _, b := range f.Blobs {
		out = append(out, b...)
	}
	return out
}

// padProto is the protobuf message msg padded to exactly size bytes with
// an unknown bytes field; nil when it does not fit.
func padProto(msg []byte, size int) []byte {
	rem := size - len(msg) - 2 // the tag of field 1000 is two bytes
	for k := 1; k <= 3; k++ {
		if l := rem - k; l >= 0 && protowire.SizeVarint(uint64(l)) == k {
			out := protowire.AppendTag(bytes.Clone(msg), 1000, protowire.BytesType)
			out = protowire.AppendVarint(out, uint64(l))
			return append(out, make([]byte, l)...)
		}
	}
	return nil
}
