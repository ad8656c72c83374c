package app

import (
	"context"
	"fmt"
	"sync"

	"github.com/asynkron/protoactor-go/actor"

	"github.com/keyward/keyward/actors/actorkit"
)

// An AppActor owns its application's subscription to the cluster bus: it subscribes
// before its first socket is registered (a join or an admission waits for the
// subscription, so that nothing published after the socket counts is missed) and
// unsubscribes when its last socket left and no admission is under way. A delivery from
// the bus reaches the actor as a message with its bytes (busDelivery) and is handed to
// the sockets in Receive (BusConfig.Deliver, which only sends messages). The
// subscription belongs to the registry, so it outlives a restart of the actor; it ends
// when the actor stops.

// Subscriber is the cluster bus as an AppActor uses it (cluster.Bus).
type Subscriber interface {
	Subscribe(ctx context.Context, topic string, fn func(payload []byte)) (unsubscribe func(), err error)
}

// BusConfig is how AppActors receive their application's deliveries.
type BusConfig struct {
	Bus Subscriber
	// TopicPrefix names the applications' topics: the prefix and the application's id.
	TopicPrefix string
	// Deliver hands each delivery to the app's sockets on this node.
	Deliver Deliverer
}

// Deliverer hands one delivery of an app's topic to the app's sockets on this node. It
// runs in the AppActor's Receive and must not block (it only sends messages).
type Deliverer interface {
	Deliver(appID string, payload []byte, sockets []Member)
}

// SetBus has the AppActors subscribe to their applications' topics; it is called once,
// before the first socket joins. Without it sockets join with no subscription.
func (a *Apps[S]) SetBus(cfg BusConfig) {
	a.mu.Lock()
	a.bus = cfg
	a.mu.Unlock()
}

func (a *Apps[S]) busConfig() BusConfig {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.bus
}

// Topics answers how many application topics this node's AppActors are subscribed to.
func (a *Apps[S]) Topics() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.topics
}

func (a *Apps[S]) countTopic(delta int) {
	a.mu.Lock()
	a.topics += delta
	a.mu.Unlock()
}

// subscription is an AppActor's subscription; unsubscribe is set by the goroutine that
// made it, under mu.
type subscription struct {
	mu          sync.Mutex
	unsubscribe func()
}

func (s *subscription) end() {
	s.mu.Lock()
	stop := s.unsubscribe
	s.unsubscribe = nil
	s.mu.Unlock()
	if stop != nil {
		stop()
	}
}

// Messages of the AppActor's subscription.
type (
	// busDelivery is one message of the app's topic.
	busDelivery struct{ payload []byte }
	// subscribed: the subscription under way is made (err nil) or failed.
	subscribed struct {
		sub *subscription
		err error
	}
	// pendingJoin is a registration waiting for the subscription (an admission waits as
	// its admitReq).
	pendingJoin struct {
		m      join
		sender *actor.PID
	}
)

// joinReply answers a join: nil once the socket is registered.
type joinReply struct{ err error }

// needsSubscription answers whether a registration must wait for the subscription, and
// starts it if none is under way.
func (s *appActor[S]) needsSubscription(ctx actor.Context) bool {
	r := s.reg
	if r.sub != nil || s.dir.busConfig().Bus == nil {
		return false
	}
	if !r.subscribing {
		r.subscribing = true
		s.subscribe(ctx)
	}
	return true
}

// subscribe makes the subscription off the actor; the answer comes back as subscribed.
func (s *appActor[S]) subscribe(ctx actor.Context) {
	cfg, appID := s.dir.busConfig(), s.appID
	self, root := ctx.Self(), ctx.ActorSystem().Root
	sub := &subscription{}
	actorkit.Pipe(s.dir.work, root, self, "a bus subscription", []any{"app", appID}, askTimeout,
		func(ctx context.Context) subscribed {
			stop, err := cfg.Bus.Subscribe(ctx, cfg.TopicPrefix+appID, func(payload []byte) { root.Send(self, busDelivery{payload: payload}) })
			if err != nil {
				return subscribed{sub: sub, err: fmt.Errorf("actors: subscribe app %s: %w", appID, err)}
			}
			sub.mu.Lock()
			sub.unsubscribe = stop
			sub.mu.Unlock()
			return subscribed{sub: sub}
		},
		func(any) subscribed {
			return subscribed{sub: sub, err: fmt.Errorf("actors: subscribing app %s failed", appID)}
		})
}

// receiveBus handles the subscription's messages; it answers false for others.
func (s *appActor[S]) receiveBus(ctx actor.Context) bool {
	r := s.reg
	switch m := ctx.Message().(type) {
	case busDelivery:
		if len(r.sockets) > 0 {
			s.dir.busConfig().Deliver.Deliver(s.appID, m.payload, r.members())
		}
	case subscribed:
		r.subscribing = false
		joins, admits := r.pendingJoins, r.pendingAdmits
		r.pendingJoins, r.pendingAdmits = nil, nil
		if m.err != nil {
			for _, j := range joins {
				ctx.Send(j.sender, joinReply{err: m.err})
			}
			for _, a := range admits {
				a.answer(m.err)
			}
			return true
		}
		r.sub = m.sub
		s.dir.countTopic(1)
		for _, j := range joins {
			s.register(ctx, j.m.id, j.m.socket)
			ctx.Send(j.sender, joinReply{})
		}
		for _, a := range admits {
			s.runAdmission(ctx, a)
		}
		s.maybeUnsubscribe() // every registration that waited may have gone meanwhile
	default:
		return false
	}
	return true
}

// maybeUnsubscribe ends the subscription when the app has no socket on this node, no
// admission under way and none waiting.
func (s *appActor[S]) maybeUnsubscribe() {
	r := s.reg
	if r.sub == nil || len(r.sockets) > 0 || r.admitting > 0 || len(r.pendingJoins) > 0 || len(r.pendingAdmits) > 0 {
		return
	}
	s.unsubscribe()
}

// unsubscribe ends the subscription (on a goroutine: it is a bus call).
func (s *appActor[S]) unsubscribe() {
	r := s.reg
	if r.sub == nil {
		return
	}
	sub := r.sub
	r.sub = nil
	s.dir.countTopic(-1)
	s.dir.work.Go("the end of a bus subscription", []any{"app", s.appID}, func(context.Context) { sub.end() }, nil)
}
