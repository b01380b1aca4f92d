// Package sql classifies SQL text by what its statements do: read,
// write, destroy (DROP, TRUNCATE, ALTER ... DROP), write without bounds
// (DELETE or UPDATE without WHERE), change privileges (GRANT, REVOKE,
// CREATE/ALTER/DROP USER, roles, passwords), read or write the database
// server's files (LOAD DATA INFILE, SELECT ... INTO OUTFILE, LOAD_FILE,
// pg_read_file, lo_import, ...) or run programs (sys_exec, xp_cmdshell,
// COPY ... PROGRAM, plugins and UDF libraries).
//
// The statements are parsed by the TiDB parser (MySQL dialect, with
// ANSI_QUOTES so "Name" is an identifier), a maintained pure-Go parser
// of a real grammar. Text it cannot parse, as a whole, is reported as such
// (OK false) and never classified as harmless: other dialects' statements
// that MySQL's grammar does not have (PostgreSQL's COPY or :: casts,
// SQLite's ATTACH, T-SQL's EXEC) are unparsed, so a policy asks. A
// lexical scan of the unparsed text still names the effects it mentions,
// for the message. PostgreSQL's common read-only syntax (casts, JSON and
// regular expression operators, ILIKE, DISTINCT ON) is read when it can be
// proven a plain read (postgres.go); any other PostgreSQL text stays
// unparsed.
package sql

import (
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/pingcap/tidb/pkg/parser"
	"github.com/pingcap/tidb/pkg/parser/ast"
	"github.com/pingcap/tidb/pkg/parser/mysql"
	// The parser needs a value driver for literals.
	_ "github.com/pingcap/tidb/pkg/parser/test_driver"
)

// The effects a statement can have.
const (
	// Read: the statement only reads (SELECT, SHOW, EXPLAIN, DESCRIBE).
	Read = "read"
	// Write: it changes rows or schema objects within bounds.
	Write = "write"
	// Destroy: DROP of a database, schema, table, view, index, sequence or
	// routine; TRUNCATE; ALTER TABLE ... DROP / TRUNCATE PARTITION.
	Destroy = "destroy"
	// Unbounded: DELETE or UPDATE without WHERE (every row).
	Unbounded = "unbounded"
	// Privilege: GRANT, REVOKE, CREATE/ALTER/DROP/RENAME USER, roles,
	// SET PASSWORD.
	Privilege = "privilege"
	// ServerFile: reads or writes a file of the database server.
	ServerFile = "server_file"
	// Program: runs a program or loads code on the server.
	Program = "program"
	// Admin: shuts down, restarts, kills sessions or flushes the server.
	Admin = "admin"
)

// MaxSQL is the longest text Classify parses; longer text is unparsed.
const MaxSQL = 256 << 10

// Statement is one classified statement.
type Statement struct {
	// Kind is the statement's type, lower case without "stmt" ("select",
	// "droptable", "delete", ...).
	Kind string
	// Text is the statement's source text.
	Text string
	// Effects are its effects, sorted.
	Effects []string
}

// Result is the classification of a SQL text.
type Result struct {
	// OK is false when the text does not parse; Statements is then empty.
	OK bool
	// Error is the parse error, "" when OK.
	Error string
	// Statements are the statements, in order.
	Statements []Statement
	// Effects are the effects of all statements, sorted; for unparsed
	// text, those its words mention (lexical, for messages only).
	Effects []string
}

var pool = sync.Pool{New: func() any {
	p := parser.New()
	p.SetSQLMode(mysql.ModeANSIQuotes)
	return p
}}

// Classify parses text and classifies each statement.
func Classify(text string) Result {
	if strings.TrimSpace(text) == "" {
		return Result{OK: false, Error: "no statement", Statements: []Statement{}, Effects: []string{}}
	}
	if len(text) > MaxSQL {
		return Result{OK: false, Error: "the text is too long to parse", Statements: []Statement{}, Effects: lexical(text[:MaxSQL])}
	}
	if why := dialectAmbiguous(text); why != "" {
		return Result{OK: false, Error: why, Statements: []Statement{}, Effects: lexical(text)}
	}
	// The statements belong to the parser until its next parse, so it goes
	// back to the pool only once they are classified: another goroutine's
	// parse would rewrite them under this one's feet.
	p := pool.Get().(*parser.Parser)
	stmts, _, err := parse(p, text)
	if err != nil {
		pool.Put(p)
		if r, ok := postgresRead(text); ok {
			return r
		}
		msg, _, _ := strings.Cut(err.Error(), "\n")
		return Result{OK: false, Error: msg, Statements: []Statement{}, Effects: lexical(text)}
	}
	res := Result{OK: true, Statements: make([]Statement, 0, len(stmts))}
	all := map[string]bool{}
	for _, s := range stmts {
		st := classify(s)
		for _, e := range st.Effects {
			all[e] = true
		}
		res.Statements = append(res.Statements, st)
	}
	pool.Put(p)
	res.Effects = keys(all)
	if len(res.Statements) == 0 {
		return Result{OK: false, Error: "no statement", Statements: []Statement{}, Effects: []string{}}
	}
	return res
}

// dialectAmbiguous says why text may split into other statements on another
// server than the parser reads it, or "" when it cannot. MySQL and PostgreSQL
// lex a backslash in a string, `#` and a `--` with no space after it
// differently: `SELECT 1 # 2; DELETE FROM t` is one read to MySQL (a comment)
// and a read then a DELETE to PostgreSQL (an operator), and `SELECT 'a\' ,
// ' ; DELETE FROM t; ...'` the other way round. The text does not say which
// server runs it, so such text is never proven harmless: a policy asks.
func dialectAmbiguous(text string) string {
	switch {
	case strings.Contains(text, `\`):
		return "a backslash: MySQL and PostgreSQL read it differently in a string, so the statements are not proven"
	case strings.Contains(text, "#"):
		return "#: a comment to MySQL, an operator to PostgreSQL, so the statements are not proven"
	}
	for i := strings.Index(text, "--"); i >= 0; {
		if j := i + 2; j < len(text) && !strings.ContainsRune(" \t\r\n", rune(text[j])) {
			return "-- with no space after it: a comment to PostgreSQL, not to MySQL, so the statements are not proven"
		}
		next := strings.Index(text[i+2:], "--")
		if next < 0 {
			break
		}
		i += 2 + next
	}
	return ""
}

// parse runs the parser, turning a panic of the parser into an error.
func parse(p *parser.Parser, text string) (stmts []ast.StmtNode, warns []error, err error) {
	defer func() {
		if r := recover(); r != nil {
			stmts, err = nil, errPanic
		}
	}()
	return p.Parse(text, "", "")
}

type parseError string

func (e parseError) Error() string { return string(e) }

const errPanic = parseError("the parser failed on this text")

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// classify returns a statement's kind and effects.
func classify(s ast.StmtNode) Statement {
	v := &visitor{effects: map[string]bool{}}
	s.Accept(v)
	kind := strings.TrimSuffix(strings.ToLower(strings.TrimPrefix(typeName(s), "*ast.")), "stmt")
	switch n := s.(type) {
	case *ast.SelectStmt, *ast.SetOprStmt, *ast.ShowStmt, *ast.ExplainStmt, *ast.TraceStmt:
		if e, ok := n.(*ast.ExplainStmt); ok && e.Analyze {
			// EXPLAIN ANALYZE runs the statement.
			e.Stmt.Accept(v)
			v.effects[Write] = !ast.IsReadOnly(e.Stmt, false) || v.effects[Write]
		}
		if !v.effects[Write] {
			v.effects[Read] = true
		}
	case *ast.DeleteStmt:
		v.effects[Write] = true
		if n.Where == nil {
			v.effects[Unbounded] = true
		}
	case *ast.UpdateStmt:
		v.effects[Write] = true
		if n.Where == nil {
			v.effects[Unbounded] = true
		}
	case *ast.DropDatabaseStmt, *ast.DropTableStmt, *ast.DropIndexStmt, *ast.DropSequenceStmt, *ast.TruncateTableStmt,
		*ast.DropProcedureStmt, *ast.DropPlacementPolicyStmt, *ast.DropResourceGroupStmt, *ast.DropBindingStmt, *ast.DropStatsStmt:
		v.effects[Destroy] = true
	case *ast.AlterTableStmt:
		v.effects[Write] = true
		for _, spec := range n.Specs {
			switch spec.Tp {
			case ast.AlterTableDropColumn, ast.AlterTableDropPrimaryKey, ast.AlterTableDropIndex, ast.AlterTableDropForeignKey,
				ast.AlterTableDropPartition, ast.AlterTableTruncatePartition, ast.AlterTableDropCheck, ast.AlterTableDiscardPartitionTablespace,
				ast.AlterTableDiscardTablespace, ast.AlterTableExchangePartition, ast.AlterTableRemovePartitioning:
				v.effects[Destroy] = true
			}
		}
	case *ast.GrantStmt, *ast.RevokeStmt, *ast.CreateUserStmt, *ast.AlterUserStmt, *ast.DropUserStmt, *ast.RenameUserStmt,
		*ast.GrantRoleStmt, *ast.RevokeRoleStmt, *ast.SetPwdStmt, *ast.SetRoleStmt, *ast.SetDefaultRoleStmt, *ast.GrantProxyStmt:
		v.effects[Privilege] = true
	case *ast.LoadDataStmt:
		v.effects[Write] = true
		if n.FileLocRef == ast.FileLocServerOrRemote {
			v.effects[ServerFile] = true
		}
	case *ast.ImportIntoStmt:
		v.effects[Write] = true
		v.effects[ServerFile] = true
	case *ast.ShutdownStmt, *ast.RestartStmt, *ast.KillStmt, *ast.FlushStmt:
		v.effects[Admin] = true
	case *ast.SetStmt:
		v.effects[Write] = true
		for _, va := range n.Variables {
			if va.IsGlobal || va.IsSystem && globalVars().MatchString(va.Name) {
				v.effects[Admin] = true
			}
		}
	default:
		if !ast.IsReadOnly(s, false) {
			v.effects[Write] = true
		} else if len(v.effects) == 0 {
			v.effects[Read] = true
		}
	}
	effects := []string{}
	for k, on := range v.effects {
		if on {
			effects = append(effects, k)
		}
	}
	sort.Strings(effects)
	return Statement{Kind: kind, Text: strings.TrimSpace(s.OriginalText()), Effects: effects}
}

func typeName(s ast.StmtNode) string {
	return strings.TrimPrefix(strings.TrimPrefix(sprintType(s), "*"), "ast.")
}

// globalVars are server variables that reach the file system or code.
var globalVars = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)^(secure_file_priv|general_log_file|slow_query_log_file|plugin_dir|init_connect|init_file|local_infile)$`)
})

// visitor collects the effects of the expressions inside a statement.
type visitor struct {
	effects map[string]bool
}

func (v *visitor) Enter(n ast.Node) (ast.Node, bool) {
	switch x := n.(type) {
	case *ast.FuncCallExpr:
		name := x.FnName.L
		if i := strings.LastIndexByte(name, '.'); i >= 0 {
			name = name[i+1:]
		}
		switch {
		case fileFuncs[name]:
			v.effects[ServerFile] = true
		case programFuncs[name]:
			v.effects[Program] = true
		}
	case *ast.SelectStmt:
		if x.SelectIntoOpt != nil {
			v.effects[ServerFile] = true
			v.effects[Write] = true
		}
	case *ast.SelectIntoOption:
		v.effects[ServerFile] = true
		v.effects[Write] = true
	}
	return n, false
}

func (v *visitor) Leave(n ast.Node) (ast.Node, bool) { return n, true }

// Functions that reach the server's files or run programs, across the
// databases MCP servers front (MySQL, PostgreSQL, SQL Server, SQLite).
var (
	fileFuncs = set("load_file", "pg_read_file", "pg_read_binary_file", "pg_ls_dir", "pg_stat_file", "pg_ls_logdir", "pg_ls_waldir",
		"lo_import", "lo_export", "pg_file_write", "pg_file_unlink", "pg_file_rename", "openrowset", "opendatasource", "readfile",
		"writefile", "load_extension", "edit", "fts3_tokenizer")
	programFuncs = set("sys_exec", "sys_eval", "sys_bineval", "xp_cmdshell", "pg_execute_server_program", "dblink", "dblink_exec",
		"dblink_connect", "sp_oacreate", "sp_execute_external_script", "lo_from_bytea", "shell", "exec", "system")
)

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

// lexical names the effects that unparsed text mentions (for messages;
// unparsed text is never judged harmless).
func lexical(text string) []string {
	m := map[string]bool{}
	for effect, re := range lexicalRules() {
		if re.MatchString(text) {
			m[effect] = true
		}
	}
	return keys(m)
}

// lexicalRules compile on first use (package init runs in every process).
var lexicalRules = sync.OnceValue(func() map[string]*regexp.Regexp {
	return map[string]*regexp.Regexp{
		Destroy:    regexp.MustCompile(`(?is)\b(drop\s+(database|schema|table|view|index|sequence|function|procedure|extension|owned|role|user|type|trigger)|truncate|alter\s+table\b.*\bdrop)\b`),
		Unbounded:  regexp.MustCompile(`(?is)\b(delete\s+from\s+[\w."\[\]` + "`" + `]+\s*(;|$)|update\s+[\w."\[\]]+\s+set\b[^;]*?(;|$))`),
		Privilege:  regexp.MustCompile(`(?i)\b(grant|revoke|create\s+(user|role|login)|alter\s+(user|role|login)|drop\s+(user|role|login)|set\s+role|superuser|sp_addsrvrolemember|sp_addlogin)\b`),
		ServerFile: regexp.MustCompile(`(?i)\bcopy\b[^;]*\b(from|to)\s+'|\b(pg_read_file|pg_read_binary_file|pg_ls_dir|lo_import|lo_export|load\s+data|into\s+(outfile|dumpfile)|load_file|attach\s+database|openrowset|bulk\s+insert|load_extension)\b`),
		Program:    regexp.MustCompile(`(?i)\b(program|xp_cmdshell|sys_exec|sys_eval|pg_execute_server_program|create\s+(or\s+replace\s+)?function\b[^;]*\blanguage\s+(plpython|plperlu|pltcl|c)\w*|sp_oacreate|sp_configure|dblink|create\s+extension)\b`),
	}
})
