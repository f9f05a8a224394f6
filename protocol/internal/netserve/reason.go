package netserve

import (
	"sync"

	"github.com/sluicemq/sluice/engine"
)

// EndReason remembers why a served connection ends: the first reason set
// wins (a heart-beat timeout, then the ERROR frame it sends, is a
// heart-beat timeout), and the front-end hands it to the engine's
// Connection.CloseWithReason, which logs and counts it. The zero value is
// ready to use.
type EndReason struct {
	mu     sync.Mutex
	set    bool
	reason engine.CloseReason
	cause  error
}

// Set records reason and its cause (may be nil) unless a reason is set
// already.
func (e *EndReason) Set(reason engine.CloseReason, cause error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.set {
		e.set, e.reason, e.cause = true, reason, cause
	}
}

// Get returns the reason set, or engine.ClosedNetworkError when none is:
// a connection that ends for no reason of its own lost its network.
func (e *EndReason) Get() (engine.CloseReason, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.set {
		return engine.ClosedNetworkError, nil
	}
	return e.reason, e.cause
}
