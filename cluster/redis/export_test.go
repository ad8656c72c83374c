package redis

// BusChannel answers the channel of topic, for tests that look at the bus from outside.
func (e *Engine) BusChannel(topic string) string { return e.channel(topic) }

// UseClassicBus makes an engine on a Redis Cluster use classic Pub/Sub, as on servers
// without sharded Pub/Sub (Redis 6). Call it before anything subscribes or publishes.
func (e *Engine) UseClassicBus() { e.sharded = false }
