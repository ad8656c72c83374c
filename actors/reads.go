package actors

import (
	"context"
	"errors"
	"fmt"

	"github.com/asynkron/protoactor-go/actor"
)

// Reads of an app's live state (its online count, its session list) go to the app's
// actor as a message too. The state itself lives where every node sees it (the cluster
// engine); the actor runs the read outside Receive and coalesces requests: however many
// dashboards poll an app's online count, one read of a kind runs at a time per app and
// node, and the requests that arrive meanwhile share the next one. A request is answered
// only by a read that started after it arrived, so a caller that saw a socket join (or
// leave) never gets a count from before that.

// ReadFunc reads part of an app's live state; it runs on a goroutine of the directory.
type ReadFunc func(ctx context.Context) (any, error)

// Messages of the reads.
type (
	readReq struct {
		key  string
		read ReadFunc
	}
	readDone struct {
		key string
		val any
		err error
	}
	readReply struct {
		val any
		err error
	}
)

// readState is one kind of read of an app: the requests the read under way answers, and
// the ones that wait for the next read (with the function of the latest of them).
type readState struct {
	running bool
	current []*actor.PID
	next    []*actor.PID
	read    ReadFunc
}

// Read asks the app's actor for a read of its live state: requests with the same key
// share one run of read, started after they arrived (see above). It answers read's
// value and error.
func (a *Apps[S]) Read(ctx context.Context, appID, key string, read ReadFunc) (any, error) {
	res, err := a.ask(ctx, appID, readReq{key: key, read: read})
	if err != nil {
		return nil, err
	}
	r, ok := res.(readReply)
	if !ok {
		return nil, fmt.Errorf("app actor %s: unexpected answer %T to a read", appID, res)
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
		st := s.reg.reads[m.key]
		if st == nil {
			st = &readState{}
			s.reg.reads[m.key] = st
		}
		st.next, st.read = append(st.next, ctx.Sender()), m.read
		if !st.running {
			s.startRead(ctx, m.key, st)
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
	self, root, dir, appID, read := ctx.Self(), ctx.ActorSystem().Root, s.dir, s.appID, st.read
	dir.loads.Add(1)
	go func() {
		defer dir.loads.Done()
		var (
			val any
			err = errors.New("actors: the read failed")
		)
		defer func() {
			if p := recover(); p != nil {
				dir.panicked("a read of an app's live state ("+key+")", appID, p)
			}
			root.Send(self, readDone{key: key, val: val, err: err})
		}()
		rctx, cancel := context.WithTimeout(dir.base, askTimeout)
		defer cancel()
		val, err = read(rctx)
	}()
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
