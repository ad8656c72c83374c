package events

import (
	"context"
	"errors"
	"time"
)

// Notes are the event types that record what happened on one node and change nothing: a
// client socket connected (ws.connect, at DEBUG). No one acknowledges them and no consumer
// but the application log wants them, so they skip the durable log: Publish queues a note
// and returns at once, and the node hands its notes, gathered for noteDelay, to the
// consumers registered with ConsumerConfig.Notes (the log writer, idempotent by id) in one
// call. A crash loses the notes of the last noteDelay; an acknowledged change never rides
// here (a type is a note only if nothing that changes data publishes it). Nothing else
// loses one: notes beyond noteMax, and a batch a consumer kept refusing, are stored in the
// durable log like any event, which every consumer reads at least once (the log writer
// is idempotent by id, so a note it took before refusing is not written twice).
//
// Why: a socket's connect event was one SQLite append of the log, then read back by every
// consumer and written again as a log entry; that was a third of a socket's opening CPU.
var Notes = NewSet(WSConnect)

// Timings and bounds of the notes.
const (
	// noteDelay is how long the first note of a batch waits for others.
	noteDelay = 100 * time.Millisecond
	// noteMax bounds the notes waiting on a node; more are stored in the durable log (a
	// store that does not answer must not make sockets hold memory).
	noteMax = 10_000
	// noteTries is how many times a batch is handed to a consumer that fails before it is
	// dropped for it.
	noteTries = 3
)

// publishNotes queues notes (stamped like any event) for the notes loop and answers those
// beyond noteMax, which the caller stores in the durable log instead. Each note is
// stamped into the queue itself: a socket's connect, the common case, needs no slice of
// its own (an Event is some 600 bytes).
func (b *Bus) publishNotes(es []Event) (over []Event, err error) {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil, ErrClosed
	}
	for _, e := range es {
		if len(b.notes) >= noteMax {
			over = append(over, b.stamp(e))
			continue
		}
		b.notes = append(b.notes, b.stamp(e))
	}
	b.mu.Unlock()
	if len(over) > 0 {
		b.notesStored.Add(uint64(len(over)))
	}
	if len(over) < len(es) {
		b.wakeNotes()
	}
	return over, nil
}

// wakeNotes wakes the notes loop.
func (b *Bus) wakeNotes() {
	select {
	case b.noteWake <- struct{}{}:
	default:
	}
}

// NotesStored counts the notes that went to the durable log instead: queued beyond
// noteMax, or refused noteTries times by a consumer.
func (b *Bus) NotesStored() uint64 { return b.notesStored.Load() }

// runNotes hands the queued notes to the notes consumers, a batch per noteDelay at most.
// Stopped, it hands what is queued once more and returns.
func (b *Bus) runNotes(ctx context.Context) error {
	for {
		select {
		case <-b.noteWake:
			t := time.NewTimer(noteDelay)
			select {
			case <-t.C:
			case <-b.stop:
			case <-ctx.Done():
			}
			t.Stop()
			b.handNotes()
		case <-b.stop:
			b.handNotes()
			return nil
		case <-ctx.Done():
			b.handNotes()
			return nil
		}
	}
}

// handNotes takes the queued notes and hands them to each notes consumer, retrying a
// failing one a few times (the log writer answers ErrUnavailable while the database is busy).
func (b *Bus) handNotes() {
	b.mu.Lock()
	notes := b.notes
	if len(notes) > 0 {
		// The next batch fills the array the last one was handed in (spareNotes), not
		// one grown note by note: a note is a whole Event, about 200 bytes a socket's
		// connect spent in regrowth.
		b.notes, b.spareNotes = b.spareNotes, nil
	}
	var to []*Consumer
	for _, c := range b.consumers {
		if c.cfg.Notes {
			to = append(to, c)
		}
	}
	b.mu.Unlock()
	if len(notes) == 0 {
		return
	}
	for _, c := range to {
		var err error
		for try := range noteTries {
			if try > 0 {
				time.Sleep(backoff(try))
			}
			ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
			err = c.handle(ctx, notes)
			cancel()
			if err == nil {
				break
			}
		}
		if err != nil {
			// The durable log keeps them for every consumer, this one included, which
			// reads them from there with its own retries.
			b.notesStored.Add(uint64(len(notes)))
			b.cfg.Log.Warn("events: a consumer kept refusing notes; they go to the durable log", "consumer", c.cfg.Name, "notes", len(notes), "err", err)
			r, serr := b.enqueue(notes)
			if serr == nil {
				t := time.NewTimer(writeTimeout) // at shutdown the writer may be gone
				select {
				case <-r.done:
					serr = r.err
				case <-t.C:
					serr = errors.New("the log's writer did not answer")
				}
				t.Stop()
			}
			if serr != nil {
				b.cfg.Log.Error("events: notes lost: neither their consumer nor the log took them", "notes", len(notes), "err", serr)
			}
			return
		}
	}
	// Every consumer is done with the batch (none keeps it past its answer): its array is
	// the spare for the batch after next. A burst's array is let go.
	if cap(notes) <= notesKept {
		clear(notes)
		b.mu.Lock()
		b.spareNotes = notes[:0]
		b.mu.Unlock()
	}
}

// notesKept is the largest batch array handNotes keeps for a later batch.
const notesKept = 1024
