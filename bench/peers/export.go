package peers

// RegoPolicy is the text of bench.rego, for the load generator (loadgen),
// which serves it with OPA's runtime.
var RegoPolicy = regoPolicy
