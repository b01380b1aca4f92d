package stdlib

import (
	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"

	"github.com/celguard/celguard/stdlib/sql"
)

// SQL returns the sql library: SQL text classified by what its statements
// do.
func (l *Lib) SQL() cel.EnvOption {
	return cel.Lib(&library{l: l, ns: "sql"})
}

// # sql.classify
//
// Parses SQL text (one or more statements; MySQL grammar with ANSI quotes,
// by the TiDB parser) and classifies what the statements do: effects is
// the sorted union of "read", "write", "destroy" (DROP, TRUNCATE, ALTER ...
// DROP), "unbounded" (DELETE or UPDATE without WHERE), "privilege" (GRANT,
// REVOKE, users and roles), "server_file" (LOAD DATA INFILE, INTO OUTFILE,
// LOAD_FILE, pg_read_file, lo_import, ...), "program" (sys_exec,
// xp_cmdshell, COPY ... PROGRAM, dblink, ...) and "admin" (SHUTDOWN, KILL,
// SET GLOBAL). Text that does not parse has ok false, and never counts as
// harmless; its effects are then the ones its words mention (for
// messages).
//
//	sql.classify(<string>) -> <celguard.sql.Result>
//
// Examples:
//
//	sql.classify("SELECT * FROM users WHERE id = 1").effects // ["read"]
//	sql.classify("DELETE FROM users").effects               // ["unbounded", "write"]
//	sql.classify("select 1; drop table t").kinds            // ["select", "droptable"]
//	sql.classify("COPY t FROM PROGRAM 'id'").ok             // false
//
// Introduced in stdlib version 4.
func (l *Lib) sqlFns() []*fnDef {
	return []*fnDef{
		{ns: "sql", name: "sql.classify", version: 4, ovs: []*ovDef{{
			id: "sql_classify_string", args: []*cel.Type{cel.StringType}, result: cel.ObjectType(SQLResultTypeName),
			cost: linearCost(50, 0, 2).withSize(firstArgSize(64)),
			unary: func(v ref.Val) ref.Val {
				s, ok := v.(types.String)
				if !ok {
					return types.MaybeNoSuchOverloadErr(v)
				}
				r := sql.Classify(string(s))
				kinds := make([]string, len(r.Statements))
				texts := make([]string, len(r.Statements))
				for i, st := range r.Statements {
					kinds[i], texts[i] = st.Kind, st.Text
				}
				return newObj(sqlResultType, sqlResultKeys, types.Bool(r.OK), types.String(r.Error),
					types.NewStringList(adapter, r.Effects), types.NewStringList(adapter, kinds), types.NewStringList(adapter, texts))
			},
		}}},
	}
}
