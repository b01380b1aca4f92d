// Package policy is the YAML model of celguard policy files: parsing with a
// position on every node, schema checks and diagnostics with stable codes.
//
// It is the bottom of celguard's import graph and knows nothing of CEL
// evaluation: expressions are kept as source text with their file positions,
// and the compile package turns them into programs.
package policy
