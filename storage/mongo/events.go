package mongo

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.mongodb.org/mongo-driver/v2/bson"
	"go.mongodb.org/mongo-driver/v2/mongo"
	"go.mongodb.org/mongo-driver/v2/mongo/options"

	"github.com/keyward/keyward/internal/supervise"
	"github.com/keyward/keyward/storage"
)

var _ storage.EventLogStore = (*Store)(nil)

// eventDoc is a stored event. Its _id is its position: the unique _id index is what
// gives each position to one appender only (see AppendEvents).
type eventDoc struct {
	Pos     int64     `bson:"_id"`
	ID      string    `bson:"eventId"`
	AppID   string    `bson:"appId"`
	Seq     int64     `bson:"seq"`
	Type    string    `bson:"type"`
	Payload []byte    `bson:"payload"`
	At      time.Time `bson:"at"`
}

func (d eventDoc) record() storage.EventRecord {
	return storage.EventRecord{ID: d.ID, Pos: d.Pos, Seq: d.Seq, Type: d.Type, AppID: d.AppID, Payload: d.Payload, At: fromDate(d.At)}
}

// cursorDoc is a consumer's stored cursor.
type cursorDoc struct {
	Consumer  string    `bson:"_id"`
	Pos       int64     `bson:"pos"`
	UpdatedAt time.Time `bson:"updatedAt"`
}

// headDoc is a hint of the log's head: the last position ("pos") and each app's last seq
// ("app:<id>"), written after each append. Reading the true maximum needs a sorted query,
// which FerretDB 1.x runs as a full scan and sort in memory (417 ms per append with 2,000
// events stored); the hints are point reads. A hint is never above the truth (it is
// raised with $max after the insert), so an appender that trusts a stale one only gets a
// duplicate key and then reads the truth.
type headDoc struct {
	ID  string `bson:"_id"`
	Max int64  `bson:"max"`
}

const posHead = "pos"

func appHead(appID string) string { return "app:" + appID }

// raiseLockAttempts bounds the tries for the position hint's lock (see raiseHeads).
const raiseLockAttempts = 40

// appendAttempts bounds the rounds of one AppendEvents when other appenders keep taking
// the positions it chose; each lost round means another node appended meanwhile.
const appendAttempts = 50

// AppendEvents stores the batch at the next free positions.
//
// Neither a counter updated with $inc nor a transaction works on both servers: FerretDB
// 1.24 has no multi-document transactions, and its updates run as a read followed by an
// unconditional write (see updateDoc), so two $inc can give the same value. Inserting into
// a unique index is atomic on both. So the appender takes each app's last seq and the last
// position (from the head hints, see headDoc), and inserts the batch after them in order:
// _id (the position) and (appId, seq) are unique, so a position and an app's seq go to
// one appender only. Taken positions stay a prefix 1..max (an insert at p succeeds only
// when p-1 is taken), so positions are given in the order inserts succeed, and an app's
// seqs too: pos and seq agree. An appender that lost the race gets a duplicate key, keeps
// what it wrote before that, removes what it may have written after it (FerretDB can
// write documents of an ordered batch past the failing one), reads the true maxima and
// tries again with the rest.
func (s *Store) AppendEvents(ctx context.Context, evs []storage.EventRecord) error {
	const op = "append events"
	rest := evs
	exact := false
	for attempt := 0; len(rest) > 0; attempt++ {
		if attempt >= appendAttempts {
			return fmt.Errorf("mongo: %s: %w: %d rounds lost to other appenders", op, storage.ErrUnavailable, attempt)
		}
		if attempt > 0 {
			if err := backoff(ctx, attempt); err != nil {
				return wrap(op, err)
			}
		}
		written, err := s.appendRound(ctx, rest, exact)
		if written > 0 {
			if herr := s.raiseHeads(ctx, rest[:written]); herr != nil {
				return wrap(op, herr)
			}
		}
		rest = rest[written:]
		if err != nil && !isDuplicateKey(err) {
			return wrap(op, err)
		}
		exact = err != nil
	}
	return nil
}

// heads answers the last position and the last seq of each of the apps: from the hints,
// or (exact) from the events themselves.
func (s *Store) heads(ctx context.Context, apps []string, exact bool) (int64, map[string]int64, error) {
	seqs := make(map[string]int64, len(apps))
	if !exact {
		ids := make([]string, 0, len(apps)+1)
		ids = append(ids, posHead)
		for _, a := range apps {
			ids = append(ids, appHead(a))
		}
		var pos int64
		for _, id := range ids {
			var h headDoc
			err := s.eventHeads.FindOne(ctx, bson.D{{Key: "_id", Value: id}}).Decode(&h)
			if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
				return 0, nil, err
			}
			if id == posHead {
				pos = h.Max
			} else {
				seqs[id[len("app:"):]] = h.Max
			}
		}
		return pos, seqs, nil
	}
	for _, a := range apps {
		var last eventDoc
		err := s.events.FindOne(ctx, bson.D{{Key: "appId", Value: a}},
			options.FindOne().SetSort(bson.D{{Key: "appId", Value: 1}, {Key: "seq", Value: -1}}).SetProjection(bson.D{{Key: "seq", Value: 1}})).Decode(&last)
		if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
			return 0, nil, err
		}
		seqs[a] = last.Seq
	}
	var last eventDoc
	err := s.events.FindOne(ctx, bson.D{}, options.FindOne().SetSort(bson.D{{Key: "_id", Value: -1}}).
		SetProjection(bson.D{{Key: "_id", Value: 1}})).Decode(&last)
	if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
		return 0, nil, err
	}
	return last.Pos, seqs, nil
}

// raiseHeads raises the hints to what evs (stored) reached.
//
// The raises hold the position hint's lock (tryLockDoc). FerretDB 1.x runs a $max as a
// read of the hint and a write of it, so two unlocked raises racing can leave the lower
// one: the hint would then fall below events already acknowledged, and no consumer would
// read them (ReadEvents stops at the hint) until the next append raised it again. An
// app's seq hint falling back is harmless (an appender trusting it gets a duplicate key
// and reads the truth; compaction keeps more), but it is raised in the same write. The
// lock is one for the whole log, so an appender waits for it at most raiseLockAttempts
// short rounds (well under a second) and then raises without it, as before the lock:
// an append is never failed or held long for the hint's sake.
func (s *Store) raiseHeads(ctx context.Context, evs []storage.EventRecord) error {
	release, err := s.tryLockDoc(ctx, s.eventHeads, posHead, "", raiseLockAttempts, 3)
	if err != nil {
		return err
	}
	if release != nil {
		defer release()
	}
	top := map[string]int64{posHead: evs[len(evs)-1].Pos}
	for _, e := range evs {
		top[appHead(e.AppID)] = max(top[appHead(e.AppID)], e.Seq)
	}
	models := make([]mongo.WriteModel, 0, len(top))
	for id, v := range top {
		models = append(models, mongo.NewUpdateOneModel().SetFilter(bson.D{{Key: "_id", Value: id}}).
			SetUpdate(bson.D{{Key: "$max", Value: bson.D{{Key: "max", Value: v}}}}).SetUpsert(true))
	}
	_, err = s.eventHeads.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
	if err != nil && isDuplicateKey(err) {
		// Two first upserts of one hint raced; the other made it. Raise it again.
		_, err = s.eventHeads.BulkWrite(ctx, models, options.BulkWrite().SetOrdered(false))
	}
	return err
}

// appendRound tries to insert evs after the last position and seqs, and answers how many
// (a prefix of evs) are stored, with their Pos and Seq set.
func (s *Store) appendRound(ctx context.Context, evs []storage.EventRecord, exact bool) (int, error) {
	var apps []string
	seen := map[string]bool{}
	for _, e := range evs {
		if !seen[e.AppID] {
			seen[e.AppID] = true
			apps = append(apps, e.AppID)
		}
	}
	pos, seqs, err := s.heads(ctx, apps, exact)
	if err != nil {
		return 0, err
	}
	docs := make([]any, len(evs))
	planned := make([]eventDoc, len(evs))
	for i, e := range evs {
		pos++
		seqs[e.AppID]++
		planned[i] = eventDoc{Pos: pos, ID: e.ID, AppID: e.AppID, Seq: seqs[e.AppID], Type: e.Type, Payload: e.Payload, At: storage.Truncate(e.At)}
		if planned[i].Payload == nil {
			planned[i].Payload = []byte{}
		}
		docs[i] = planned[i]
	}
	_, insErr := s.events.InsertMany(ctx, docs, options.InsertMany().SetOrdered(true))
	if insErr == nil {
		for i := range evs {
			evs[i].Pos, evs[i].Seq = planned[i].Pos, planned[i].Seq
		}
		return len(evs), nil
	}
	// Find which of ours are stored: each planned position holding our event id.
	ids := make([]string, len(evs))
	for i, e := range evs {
		ids[i] = e.ID
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
	defer cancel()
	cur, err := s.events.Find(cctx, bson.D{{Key: "eventId", Value: bson.D{{Key: "$in", Value: ids}}}},
		options.Find().SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: "eventId", Value: 1}}))
	if err != nil {
		return 0, errors.Join(insErr, err)
	}
	var stored []eventDoc
	if err := cur.All(cctx, &stored); err != nil {
		return 0, errors.Join(insErr, err)
	}
	mine := map[int64]string{}
	for _, d := range stored {
		mine[d.Pos] = d.ID
	}
	n := 0
	for n < len(planned) && mine[planned[n].Pos] == planned[n].ID {
		n++
	}
	var stray []int64
	for _, p := range planned[n:] {
		if mine[p.Pos] == p.ID {
			stray = append(stray, p.Pos)
		}
	}
	if len(stray) > 0 {
		if _, err := s.events.DeleteMany(cctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: stray}}}}); err != nil {
			return n, errors.Join(insErr, err)
		}
	}
	for i := range n {
		evs[i].Pos, evs[i].Seq = planned[i].Pos, planned[i].Seq
	}
	return n, insErr
}

// ReadEvents answers up to n events after the position, in order. It reads the positions
// after+1 … up to the head hint by _id, a few at a time (point reads: a range query with a
// sort is a full scan on FerretDB 1.x); a position that holds nothing is a hole (an event
// removed) and is skipped.
func (s *Store) ReadEvents(ctx context.Context, after int64, n int) ([]storage.EventRecord, error) {
	const op = "read events"
	if n <= 0 {
		return nil, nil
	}
	head, err := s.LastEventPos(ctx)
	if err != nil {
		return nil, err
	}
	end := min(head, after+int64(n))
	if end <= after {
		return nil, nil
	}
	recs := make([]*storage.EventRecord, end-after)
	const readers = 16
	var (
		g    supervise.Group // a reader's panic is raised again on the caller's goroutine
		mu   sync.Mutex
		errs []error
	)
	// Every position is queued before the readers start: one that panics ends, and the
	// others read the rest.
	next := make(chan int64, len(recs))
	for p := after + 1; p <= end; p++ {
		next <- p
	}
	close(next)
	for range min(readers, len(recs)) {
		g.Go(func() {
			for p := range next {
				var d eventDoc
				err := s.events.FindOne(ctx, bson.D{{Key: "_id", Value: p}}).Decode(&d)
				if errors.Is(err, mongo.ErrNoDocuments) {
					continue
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					continue
				}
				r := d.record()
				recs[p-after-1] = &r
			}
		})
	}
	g.Wait()
	if len(errs) > 0 {
		return nil, wrap(op, errors.Join(errs...))
	}
	out := make([]storage.EventRecord, 0, len(recs))
	for _, r := range recs {
		if r != nil {
			out = append(out, *r)
		}
	}
	return out, nil
}

// LastEventPos answers the newest position (the head hint), 0 for an empty log.
func (s *Store) LastEventPos(ctx context.Context) (int64, error) {
	var h headDoc
	err := s.eventHeads.FindOne(ctx, bson.D{{Key: "_id", Value: posHead}}).Decode(&h)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return 0, nil
	}
	if err != nil {
		return 0, wrap("last event pos", err)
	}
	return h.Max, nil
}

// EventCursor answers the consumer's stored cursor, 0 when none.
func (s *Store) EventCursor(ctx context.Context, consumer string) (int64, error) {
	var d cursorDoc
	err := s.eventCursors.FindOne(ctx, bson.D{{Key: "_id", Value: consumer}}).Decode(&d)
	if errors.Is(err, mongo.ErrNoDocuments) {
		return 0, nil
	}
	if err != nil {
		return 0, wrap("event cursor", err)
	}
	return d.Pos, nil
}

// SetEventCursor moves the cursor forward with $max. On FerretDB 1.x an update is a read
// and a write, so two concurrent moves can leave the lower one: the consumer then reads
// a few events again, which it handles idempotently (by event id).
func (s *Store) SetEventCursor(ctx context.Context, consumer string, pos int64) error {
	_, err := s.eventCursors.UpdateOne(ctx, bson.D{{Key: "_id", Value: consumer}},
		bson.D{{Key: "$max", Value: bson.D{{Key: "pos", Value: pos}}}, {Key: "$set", Value: bson.D{{Key: "updatedAt", Value: storage.Now()}}}},
		options.UpdateOne().SetUpsert(true))
	if err != nil && isDuplicateKey(err) {
		// Two first writes raced on the upsert: the other created it; move it now.
		_, err = s.eventCursors.UpdateOne(ctx, bson.D{{Key: "_id", Value: consumer}},
			bson.D{{Key: "$max", Value: bson.D{{Key: "pos", Value: pos}}}, {Key: "$set", Value: bson.D{{Key: "updatedAt", Value: storage.Now()}}}})
	}
	if err != nil {
		return wrap("set event cursor", err)
	}
	return nil
}

// CompactEvents removes consumed old events, oldest first, keeping each app's newest: one
// read of the candidates, one read of the newest seq of each app among them, one delete.
func (s *Store) CompactEvents(ctx context.Context, through int64, before time.Time, limit int) (int, error) {
	const op = "compact events"
	if limit <= 0 || through <= 0 {
		return 0, nil
	}
	cur, err := s.events.Find(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$lte", Value: through}}}},
		options.Find().SetSort(bson.D{{Key: "_id", Value: 1}}).SetLimit(int64(limit)).
			SetProjection(bson.D{{Key: "_id", Value: 1}, {Key: "appId", Value: 1}, {Key: "seq", Value: 1}, {Key: "at", Value: 1}}))
	if err != nil {
		return 0, wrap(op, err)
	}
	var cands []eventDoc
	if err := cur.All(ctx, &cands); err != nil {
		return 0, wrap(op, err)
	}
	newest := map[string]int64{}
	var ids []int64
	for _, c := range cands {
		if !fromDate(c.At).Before(before) {
			break // positions are appended in time order (about): stop at the first young one
		}
		top, ok := newest[c.AppID]
		if !ok {
			// The hint is never above the app's last seq: what is below it is not the newest.
			var h headDoc
			err := s.eventHeads.FindOne(ctx, bson.D{{Key: "_id", Value: appHead(c.AppID)}}).Decode(&h)
			if err != nil && !errors.Is(err, mongo.ErrNoDocuments) {
				return 0, wrap(op, err)
			}
			top = h.Max
			newest[c.AppID] = top
		}
		if c.Seq < top {
			ids = append(ids, c.Pos)
		}
	}
	if len(ids) == 0 {
		return 0, nil
	}
	res, err := s.events.DeleteMany(ctx, bson.D{{Key: "_id", Value: bson.D{{Key: "$in", Value: ids}}}})
	if err != nil {
		return 0, wrap(op, err)
	}
	return int(res.DeletedCount), nil
}
