package memory

// Len reports how many entries the engine holds (a set counts once), for tests of the
// janitor.
func (e *Engine) Len() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return len(e.limiters) + len(e.tokens) + len(e.values) + len(e.sets)
}

// SetLen reports how many members a set holds, expired ones included, for tests that
// eviction and sweeps really free memory.
func (e *Engine) SetLen(set string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if m := e.sets[set]; m != nil {
		return m.len()
	}
	return 0
}

// RingCap reports the capacity of a limiter key's ring (0 if the key is absent), for tests
// of bounded memory.
func (e *Engine) RingCap(key string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r := e.limiters[key]; r != nil {
		return len(r.times)
	}
	return 0
}
