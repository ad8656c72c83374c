package sockets

import (
	"sync/atomic"
	"time"
)

// Stats are counts of this node's channel work, for metrics.
type Stats struct {
	// RevalidationClosed counts sockets closed because a check of their session failed.
	RevalidationClosed uint64
	// RevalidationFailed counts socket checks that could not be made (the engine or the
	// store did not answer); the sockets stay until the next check.
	RevalidationFailed uint64
	// LeaseErrors counts lease renewals that failed (one per app batch).
	LeaseErrors uint64
	// InternalErrors counts errors that were neither a domain answer nor a part that did
	// not answer (bugs): a refused admission, a revalidation or a dashboard action. Each
	// is logged; its socket is told "internal error" and a client socket is closed with 1011.
	InternalErrors uint64
}

type stats struct {
	revalidationClosed, revalidationFailed, internalErrors atomic.Uint64
}

// Stats answers the node's counts.
func (s *Service) Stats() Stats {
	return Stats{RevalidationClosed: s.stats.revalidationClosed.Load(), RevalidationFailed: s.stats.revalidationFailed.Load(),
		LeaseErrors: s.reg.LeaseErrors(), InternalErrors: s.stats.internalErrors.Load()}
}

// queued reports the time from a delivery's publication (a REST call, an event, a hook)
// to its frame in a socket's queue on this node.
func (s *Service) queued(d delivery) {
	if s.d.DeliveryDelay != nil && d.At != 0 {
		s.d.DeliveryDelay(time.Since(time.UnixMicro(d.At)))
	}
}
