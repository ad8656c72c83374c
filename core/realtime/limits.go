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
	// DefaultLeaseTTL is how long a socket's presence outlives its node when no lease ttl
	// is set; a node renews its sockets' leases every third of it. MinLeaseTTL bounds
	// the setting from below (renewals are engine writes).
	DefaultLeaseTTL = 10 * time.Second
	MinLeaseTTL     = 3 * time.Second
	// MessageDeadline bounds the work of one socket message.
	MessageDeadline = 10 * time.Second
	// MaxStatus, MaxText, MaxMetaKey and MaxMetaValue bound strings a socket sends.
	MaxStatus    = 32
	MaxText      = 2000
	MaxMetaKey   = 64
	MaxMetaValue = 1024
	// MaxPayloadBytes bounds a pushed JSON payload or command payload once encoded.
	MaxPayloadBytes = 16 << 10
)

// Window is a sliding-window limiter of one socket: its actor alone calls it, one
// message at a time, so it has no lock.
type Window struct {
	// Limit hits per Per.
	Limit int
	Per   time.Duration
	hits  []time.Time
	// warned is when the socket was last told it is over the limit, in Unix nanoseconds;
	// 0 if never (8 bytes where a time.Time takes 24, on every socket).
	warned int64
}

// Warn answers whether a refused message is answered with an error: once per window, so
// that a burst over the limit fills neither the socket's queue nor its reader (the
// socket stays open, as SPEC 8 says).
func (w *Window) Warn(now time.Time) bool {
	if w.warned != 0 && now.UnixNano()-w.warned < int64(w.Per) {
		return false
	}
	w.warned = now.UnixNano()
	return true
}

// Bound answers the window's limit: Limit messages per Per.
func (w *Window) Bound() (limit int, per time.Duration) { return w.Limit, w.Per }

// Allow answers whether a message at now is within the limit, and counts it if it is.
func (w *Window) Allow(now time.Time) bool {
	cut := now.Add(-w.Per)
	i := 0
	for i < len(w.hits) && !w.hits[i].After(cut) {
		i++
	}
	w.hits = w.hits[i:]
	if len(w.hits) >= w.Limit {
		return false
	}
	w.hits = append(w.hits, now)
	return true
}
