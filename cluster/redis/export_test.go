package redis

// BusChannel answers the channel of topic, for tests that look at the bus from outside.
func (e *Engine) BusChannel(topic string) string { return e.channel(topic) }
