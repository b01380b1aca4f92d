package compile

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"

	"cel.dev/cel-go/cel"
	exprpb "google.golang.org/genproto/googleapis/api/expr/v1alpha1"
	"google.golang.org/protobuf/proto"
)

// ASTCache keeps type-checked expressions between compiles, so a process
// that compiles the same policies again (a hook runs one process per tool
// call) skips parsing and type-checking, about two thirds of compile time.
// Keys cover the expression text, the declarations in scope and the build
// of celguard, so an entry is only reused where it would check the same;
// values are serialized checked expressions. Implementations must be safe
// for the compile that uses them; they may drop entries at will.
//
// A value is what a rule evaluates, taken as it is: whoever can change a
// value can change a verdict. An implementation kept where others may
// write (a file in a directory the agent can write) must authenticate its
// entries and answer a miss for one that fails its check, as hooks.ASTCache
// does with an HMAC under a key of its state directory.
type ASTCache interface {
	Get(key string) ([]byte, bool)
	Put(key string, value []byte)
}

// WithASTCache makes Compile and Check reuse type-checked expressions from
// the cache and add the ones they check.
func WithASTCache(c ASTCache) Option {
	return func(cfg *config) error {
		if c == nil {
			return fmt.Errorf("compile.WithASTCache: nil cache")
		}
		cfg.cache = c
		return nil
	}
}

// MemoryASTCache is an ASTCache in memory, safe for concurrent use.
type MemoryASTCache struct {
	mu sync.Mutex
	m  map[string][]byte
}

// Get implements ASTCache.
func (c *MemoryASTCache) Get(key string) ([]byte, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	v, ok := c.m[key]
	return v, ok
}

// Put implements ASTCache.
func (c *MemoryASTCache) Put(key string, value []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = map[string][]byte{}
	}
	c.m[key] = value
}

// Len returns the number of entries.
func (c *MemoryASTCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.m)
}

// Entries returns a copy of every entry, to persist the cache.
func (c *MemoryASTCache) Entries() map[string][]byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string][]byte, len(c.m))
	for k, v := range c.m {
		out[k] = v
	}
	return out
}

// buildID identifies this build of celguard and cel-go, so a cache written
// by another build is never read.
var buildID = sync.OnceValue(func() string {
	id := "celguard-ast-cache-1"
	if bi, ok := debug.ReadBuildInfo(); ok {
		id += ";" + bi.Main.Path + "@" + bi.Main.Version + bi.Main.Sum
		for _, d := range bi.Deps {
			if strings.HasPrefix(d.Path, "cel.dev/") || strings.HasPrefix(d.Path, "github.com/celguard/") {
				id += ";" + d.Path + "@" + d.Version + d.Sum
			}
		}
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" || s.Key == "vcs.modified" {
				id += ";" + s.Key + "=" + s.Value
			}
		}
	}
	return id
})

// cacheKey identifies an expression checked in an environment: the build,
// the policy variables declared before it (names and types) and its text.
func (c *compiler) cacheKey(text string) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\x00%s\x00%s", buildID(), c.declKey, text)
	return hex.EncodeToString(h.Sum(nil))
}

func encodeAST(ast *cel.Ast) ([]byte, error) {
	pb, err := cel.AstToCheckedExpr(ast)
	if err != nil {
		return nil, err
	}
	return proto.Marshal(pb)
}

func decodeAST(b []byte) (*cel.Ast, error) {
	var pb exprpb.CheckedExpr
	if err := proto.Unmarshal(b, &pb); err != nil {
		return nil, err
	}
	return cel.CheckedExprToAst(&pb), nil
}
