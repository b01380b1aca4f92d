package policytest

import _ "embed"

// SuiteSchemaJSON is the JSON Schema (draft 2020-12) of *_test.yaml suite
// files, for editors to complete and validate them (`celguard schema
// test`). ParseSuite accepts what the schema accepts.
//
//go:embed schema/suite.schema.json
var SuiteSchemaJSON []byte
