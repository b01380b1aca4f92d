package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestCollectorFor: a hook process turns its collector off, the decision
// daemon (which the hook starts as `hook daemon`, daemonClient.args) keeps
// one, every other command the default.
func TestCollectorFor(t *testing.T) {
	assert.Equal(t, daemonCollector, collectorFor([]string{"hook", "daemon", "--socket", "/s", "--timeout", "10s"}))
	assert.Equal(t, hookCollector, collectorFor([]string{"hook", "claude-code"}))
	assert.Equal(t, hookCollector, collectorFor([]string{"hook"}))
	assert.Equal(t, hookCollector, collectorFor([]string{"hook", "install", "claude-code"}))
	assert.Equal(t, defaultCollector, collectorFor([]string{"serve"}))
	assert.Equal(t, defaultCollector, collectorFor(nil))
	assert.Equal(t, defaultCollector, collectorFor([]string{"daemon"}))
}
