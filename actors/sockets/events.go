package sockets

import (
	"context"
	"time"

	"github.com/keyward/keyward/actors/wire"
	"github.com/keyward/keyward/core/events"
)

// HandleEvent turns the event pipeline's events into socket deliveries (SPEC 6.3). It
// runs on the pipeline's goroutine of this node; the bus takes the deliveries to every
// node.
//   - variable.create|update|delete of an app variable: variable_update / variable_delete
//     to every client; of a user variable: user_variable_update / user_variable_delete to
//     that user.
//   - user.ban: banned, then close; user.delete and user.session_kill: force_logout, then
//     close (the sessions are gone).
//
// App changes (paused, disabled, plan, rules, hooks) are not deliveries: they reach the
// app's actor as a message (app.Apps.Invalidate), which reloads the app's
// snapshot and revalidates its sockets at once.
func (s *Service) HandleEvent(e events.Event) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	str := func(k string) string { v, _ := e.Data[k].(string); return v }
	var err error
	switch e.Name {
	case "variable.create", "variable.update", "variable.delete":
		key := str("key")
		del := e.Name == "variable.delete"
		switch str("scope") {
		case "app":
			if del {
				err = s.toClientsMsg(ctx, e.AppID, wire.Outgoing{Type: wire.TypeVariableDelete, Data: map[string]any{"key": key}})
			} else {
				err = s.toClientsMsg(ctx, e.AppID, wire.Outgoing{Type: wire.TypeVariableUpdate,
					Data: map[string]any{"key": key, "value": e.Data["value"], "type": e.Data["type"]}})
			}
		case "user":
			user := str("userId")
			if del {
				err = s.toUserMsg(ctx, e.AppID, user, wire.Outgoing{Type: wire.TypeUserVariableDel, Data: map[string]any{"key": key}}, 0, "")
			} else {
				err = s.toUserMsg(ctx, e.AppID, user, wire.Outgoing{Type: wire.TypeUserVariableUpd,
					Data: map[string]any{"key": key, "value": e.Data["value"]}}, 0, "")
			}
		}
	case "user.ban":
		err = s.bannedMsg(ctx, e.AppID, str("userId"), str("reason"))
	case "user.delete":
		err = s.toUserMsg(ctx, e.AppID, str("userId"), wire.Outgoing{Type: wire.TypeForceLogout,
			Data: map[string]any{"reason": "this account was deleted"}}, wire.CodeForceLogout, "account deleted")
	case "user.session_kill":
		err = s.toUserMsg(ctx, e.AppID, str("userId"), wire.Outgoing{Type: wire.TypeForceLogout,
			Data: map[string]any{"reason": "your sessions were ended by the application's owner"}}, wire.CodeForceLogout, "sessions ended")
	}
	if err != nil {
		s.d.Log.Warn("realtime: cannot deliver an event to sockets", "event", e.Name, "app", e.AppID, "err", err)
	}
}
