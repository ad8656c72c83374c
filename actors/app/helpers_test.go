package app

import "context"

// plain is a test socket known by its name: registered with its app's actor, with no
// actor of its own (it is not a Socket).
type plain string

func (plain) Kind() string { return "plain" }

// deliverFunc and tickFunc are a test's Deliverer and TickWork.
type deliverFunc func(appID string, payload []byte, sockets []Member)

func (f deliverFunc) Deliver(appID string, payload []byte, sockets []Member) {
	f(appID, payload, sockets)
}

type tickFunc func(ctx context.Context, appID string, sockets []Member)

func (f tickFunc) RunTick(ctx context.Context, appID string, _ Tick, sockets []Member) {
	f(ctx, appID, sockets)
}
