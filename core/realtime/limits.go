package realtime

import "time"

// Bounds of SPEC 8 (WebSocket limits) and of this implementation: domain rules. What
// crosses the wire (frames, message types, close codes, the bound of one message) is
// actors/wire's.
const (
	// MaxClientsPerApp bounds an app's client sockets across the cluster.
	MaxClientsPerApp = 500
	// ClientMessages per ClientWindow is a client socket's message rate.
	ClientMessages = 20
	ClientWindow   = 10 * time.Second
	// DashboardMessages per DashboardWindow is a dashboard socket's message rate.
	DashboardMessages = 30
	DashboardWindow   = 10 * time.Second
	// UpgradesPerMinute bounds socket upgrade requests per IP.
	UpgradesPerMinute = 10
	// RevalidateEvery is how often a client socket's session and user are checked again.
	RevalidateEvery = 30 * time.Second
	// MaxMetadataPairs bounds set_metadata.
	MaxMetadataPairs = 20
	// DefaultLeaseTTL is how long a socket's presence outlives its node when Deps.LeaseTTL
	// is not set; a node renews its sockets' leases every third of it. MinLeaseTTL bounds
	// the setting from below (renewals are engine writes).
	DefaultLeaseTTL = 10 * time.Second
	MinLeaseTTL     = 3 * time.Second
	// messageDeadline bounds the work of one socket message.
	messageDeadline = 10 * time.Second
	// maxStatus, maxText and maxMetaValue bound strings a socket sends.
	maxStatus    = 32
	maxText      = 2000
	maxMetaKey   = 64
	maxMetaValue = 1024
)

// window is a sliding-window limiter of one socket (its reader calls it, one at a time).
type window struct {
	limit int
	per   time.Duration
	hits  []time.Time
	// warned is when the socket was last told it is over the limit, in Unix nanoseconds;
	// 0 if never (8 bytes where a time.Time takes 24, on every socket).
	warned int64
}

// warn answers whether a refused message is answered with an error: once per window, so
// that a burst over the limit fills neither the socket's queue nor its reader (the
// socket stays open, as SPEC 8 says).
func (w *window) warn(now time.Time) bool {
	if w.warned != 0 && now.UnixNano()-w.warned < int64(w.per) {
		return false
	}
	w.warned = now.UnixNano()
	return true
}

func (w *window) allow(now time.Time) bool {
	cut := now.Add(-w.per)
	i := 0
	for i < len(w.hits) && !w.hits[i].After(cut) {
		i++
	}
	w.hits = w.hits[i:]
	if len(w.hits) >= w.limit {
		return false
	}
	w.hits = append(w.hits, now)
	return true
}
