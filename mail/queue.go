package mail

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"
)

// QueueConfig tunes the delivery queue. Zero values take the defaults shown.
type QueueConfig struct {
	From     string        // sender address; default "Keyward <no-reply@localhost>"
	Capacity int           // messages waiting at most; default 1000
	Attempts int           // delivery attempts per message; default 8
	Backoff  time.Duration // first retry delay, doubled each time; default 2 s
}

// Queue sends messages in the background: Enqueue never blocks the caller, and Run, on a
// goroutine its owner starts (the node's supervisor), delivers them with retries.
type Queue struct {
	cfg    QueueConfig
	sender Sender
	log    *slog.Logger
	ch     chan Message
	once   sync.Once
}

// NewQueue builds the queue; Run delivers what it holds, Close what is left.
func NewQueue(sender Sender, cfg QueueConfig, log *slog.Logger) *Queue {
	if cfg.From == "" {
		cfg.From = "Keyward <no-reply@localhost>"
	}
	if cfg.Capacity <= 0 {
		cfg.Capacity = 1000
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 8
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = 2 * time.Second
	}
	return &Queue{cfg: cfg, sender: sender, log: log, ch: make(chan Message, cfg.Capacity)}
}

// Enqueue hands a message to the worker. When the queue is full the message is dropped
// and logged: mail must never stall the request that caused it.
func (q *Queue) Enqueue(m Message) {
	select {
	case q.ch <- m:
	default:
		q.log.Error("mail queue full, message dropped", "to", m.To, "subject", m.Subject)
	}
}

// Run delivers queued messages until ctx ends, then tries each message still waiting once
// (a graceful shutdown does not lose mails already accepted) and returns nil. One Run at a
// time; a panic in it leaves the queue usable by the next.
func (q *Queue) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			q.drain()
			return nil
		case m := <-q.ch:
			q.deliver(ctx, m)
		}
	}
}

// drain tries each waiting message once when stopping, so a graceful shutdown does not
// lose mails already accepted.
func (q *Queue) drain() {
	for {
		select {
		case m := <-q.ch:
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			if err := q.sender.Send(ctx, q.cfg.From, m); err != nil {
				q.log.Error("mail not delivered before shutdown", "to", m.To, "subject", m.Subject, "err", err)
			}
			cancel()
		default:
			return
		}
	}
}

func (q *Queue) deliver(stop context.Context, m Message) {
	delay := q.cfg.Backoff
	for attempt := 1; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := q.sender.Send(ctx, q.cfg.From, m)
		cancel()
		if err == nil {
			return
		}
		if attempt >= q.cfg.Attempts {
			q.log.Error("mail delivery failed, giving up", "to", m.To, "subject", m.Subject, "attempts", attempt, "err", err)
			return
		}
		// Jitter spreads retries of many mails failing together.
		wait := delay/2 + time.Duration(rand.Int64N(int64(delay)))
		q.log.Warn("mail delivery failed, will retry", "to", m.To, "subject", m.Subject, "attempt", attempt, "retryIn", wait, "err", err)
		select {
		case <-time.After(wait):
		case <-stop.Done():
			q.log.Error("mail delivery abandoned at shutdown", "to", m.To, "subject", m.Subject, "err", err)
			return
		}
		delay *= 2
	}
}

// Close makes one last attempt at each message still waiting, for a queue whose Run has
// returned or never ran (an admin command). Idempotent.
func (q *Queue) Close() {
	q.once.Do(q.drain)
}
