// Package layering holds no code, only the test that keeps celguard's
// imports flowing one way: policy, then celenv and stdlib, then compile,
// then eval, then hooks and policytest, then package celguard (the module
// root, for embedders), then the command line. It has a
// package of its own because the rule is about the whole module, not about
// any one layer of it.
package layering
