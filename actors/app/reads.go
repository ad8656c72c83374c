package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/keyward/keyward/actors/actorkit"
	"github.com/keyward/keyward/cluster"
)

// Reads of an app's live state (its online count, its session list) go to the app's
// actor as a message too. The state itself lives where every node sees it (the cluster
// engine); the actor runs the read outside Receive and coalesces requests: however many
// dashboards poll an app's online count, one read of a kind runs at a time per app and
// node, and the requests that arrive meanwhile share the next one. A request is answered
// only by a read that started after it arrived, so a caller that saw a socket join (or
// leave) never gets a count from before that.

// LiveReader is the cluster engine's presence as an AppActor reads it (cluster.Presence).
type LiveReader interface {
	Count(ctx context.Context, app string) (int, error)
	List(ctx context.Context, app string) ([]cluster.PresentSocket, error)
	SocketOf(ctx context.Context, app, user string) (id string, ok bool, err error)
}

// ReadKind is what a read of an app's live state asks.
type ReadKind uint8

// The reads of an app's live state.
const (
	// ReadOnline counts the app's client sockets across the cluster (LiveState.Online).
	ReadOnline ReadKind = iota + 1
	// ReadSessions lists them with what each shows (LiveState.Sockets).
	ReadSessions
	// ReadUser says whether LiveRead.UserID has a socket (LiveState.UserOnline).
	ReadUser
)

// LiveRead is a read of an app's live state: its kind, and the user for ReadUser.
type LiveRead struct {
	Kind   ReadKind
	UserID string
}

func (q LiveRead) key() string {
	if q.Kind == ReadUser {
		return "user:" + q.UserID
	}
	return fmt.Sprint(q.Kind)
}

// LiveState is the answer of a read; only the member of its kind is set.
type LiveState struct {
	Online     int
	Sockets    []cluster.PresentSocket
	UserOnline bool
}

// Messages of the reads.
type (
	readReq  struct{ q LiveRead }
	readDone struct {
		key string
		val LiveState
		err error
	}
	readReply struct {
		val LiveState
		err error
	}
)

// errNoLive answers a read on a directory that was given no LiveReader.
var errNoLive = errors.New("actors: the directory reads no live state")

// SetLive gives the AppActors the presence they read an app's live state from; it is
// called once, before the first Read.
func (a *Apps[S]) SetLive(r LiveReader) {
	a.mu.Lock()
	a.live = r
	a.mu.Unlock()
}

func (a *Apps[S]) liveReader() LiveReader {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.live
}

// readState is one kind of read of an app: the requests the read under way answers, and
// the ones that wait for the next read (with the function of the latest of them).
type readState struct {
	running bool
	current []*actor.PID
	next    []*actor.PID
	q       LiveRead
}

// Read asks the app's actor for a read of its live state: requests of the same read
// share one run, started after they arrived (see above); the actor reads the directory's
// LiveReader on a goroutine.
func (a *Apps[S]) Read(ctx context.Context, appID string, q LiveRead) (LiveState, error) {
	if a.liveReader() == nil {
		return LiveState{}, errNoLive
	}
	res, err := a.ask(ctx, appID, readReq{q: q})
	if err != nil {
		return LiveState{}, err
	}
	r, ok := res.(readReply)
	if !ok {
		return LiveState{}, fmt.Errorf("app actor %s: unexpected answer %T to a read", appID, res)
	}
	return r.val, r.err
}

// receiveReads handles the reads' messages; it answers false for others.
func (s *appActor[S]) receiveReads(ctx actor.Context) bool {
	switch m := ctx.Message().(type) {
	case readReq:
		if s.reg.reads == nil {
			s.reg.reads = map[string]*readState{}
		}
		key := m.q.key()
		st := s.reg.reads[key]
		if st == nil {
			st = &readState{q: m.q}
			s.reg.reads[key] = st
		}
		st.next = append(st.next, ctx.Sender())
		if !st.running {
			s.startRead(ctx, key, st)
		}
	case readDone:
		st := s.reg.reads[m.key]
		if st == nil {
			return true
		}
		for _, w := range st.current {
			ctx.Send(w, readReply{val: m.val, err: m.err})
		}
		st.current, st.running = nil, false
		if len(st.next) > 0 {
			s.startRead(ctx, m.key, st)
		} else {
			delete(s.reg.reads, m.key)
		}
	default:
		return false
	}
	return true
}

// startRead runs the read for the requests waiting for one; its answer comes back as
// readDone (to this actor, or to the incarnation that replaced it after a restart: the
// reads are kept in the registry).
func (s *appActor[S]) startRead(ctx actor.Context, key string, st *readState) {
	st.current, st.next, st.running = st.next, nil, true
	appID, q, live := s.appID, st.q, s.dir.liveReader()
	actorkit.Pipe(s.dir.work, ctx.ActorSystem().Root, ctx.Self(), "a read of an app's live state ("+key+")", []any{"app", appID}, askTimeout,
		func(ctx context.Context) readDone {
			val, err := readLive(ctx, live, appID, q)
			return readDone{key: key, val: val, err: err}
		},
		func(any) readDone { return readDone{key: key, err: errors.New("actors: the read failed")} })
}

// readLive makes read q of app appID's live state.
func readLive(ctx context.Context, live LiveReader, appID string, q LiveRead) (LiveState, error) {
	switch q.Kind {
	case ReadOnline:
		n, err := live.Count(ctx, appID)
		if err != nil {
			return LiveState{}, fmt.Errorf("actors: count the sockets of app %s: %w", appID, err)
		}
		return LiveState{Online: n}, nil
	case ReadSessions:
		list, err := live.List(ctx, appID)
		if err != nil {
			return LiveState{}, fmt.Errorf("actors: list the sockets of app %s: %w", appID, err)
		}
		return LiveState{Sockets: list}, nil
	case ReadUser:
		_, ok, err := live.SocketOf(ctx, appID, q.UserID)
		if err != nil {
			return LiveState{}, fmt.Errorf("actors: find the socket of a user of app %s: %w", appID, err)
		}
		return LiveState{UserOnline: ok}, nil
	}
	return LiveState{}, fmt.Errorf("actors: unknown read %d", q.Kind)
}

// failReads answers every waiting read with err (the actor stops).
func (s *appActor[S]) failReads(ctx actor.Context, err error) {
	for _, st := range s.reg.reads {
		for _, w := range append(st.current, st.next...) {
			ctx.Send(w, readReply{err: err})
		}
	}
	s.reg.reads = nil
}
