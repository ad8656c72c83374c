package session

import (
	"context"

	"github.com/keyward/keyward/actors/app"
	"github.com/keyward/keyward/actors/wire"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/realtime"
)

// carryOutPlan carries out the hook actions planned for a message of the socket, in its
// actor: an answer to the sender and a log line at once, the actions that need the
// cluster or storage in the job it answers (nil when none).
func (c *Client) carryOutPlan(steps []realtime.HookAction) app.Job {
	var later []realtime.HookAction
	for _, st := range steps {
		switch st.Type {
		case "respond", "log":
			if len(later) == 0 {
				c.carryOut(context.Background(), st)
				continue
			}
		}
		later = append(later, st)
	}
	if len(later) == 0 {
		return nil
	}
	return hookActionsJob{steps: later}
}

// carryOut performs one planned hook action for the socket, its sender.
func (c *Client) carryOut(ctx context.Context, st realtime.HookAction) {
	appID := c.User.AppID
	a := st
	target := st.UserID
	if st.Target == "sender" {
		target = c.User.UserID
	}
	var err error
	switch a.Type {
	case "respond":
		c.peer.Send(wire.Encode(wire.Outgoing{Type: wire.TypeMessage, Data: map[string]any{"message": a.Message, "type": realtime.MessageType(a.MessageType)}}))
	case "send_message":
		err = c.node.ToUser(ctx, appID, target, wire.Outgoing{Type: wire.TypeMessage, Data: map[string]any{"message": a.Message, "type": realtime.MessageType(a.MessageType)}})
	case "broadcast":
		err = c.node.ToClients(ctx, appID, wire.Outgoing{Type: wire.TypeMessage, Data: map[string]any{"message": a.Message, "type": realtime.MessageType(a.MessageType)}})
	case "push_json":
		if st.Target == "all" {
			err = c.node.ToClients(ctx, appID, wire.Outgoing{Type: wire.TypeCustom, Data: a.Payload})
		} else {
			err = c.node.ToUser(ctx, appID, target, wire.Outgoing{Type: wire.TypeCustom, Data: a.Payload})
		}
	case "kick":
		err = c.node.Kick(ctx, appID, target, a.Reason)
	case "ban":
		err = c.node.Ban(ctx, appID, target, a.Reason)
	case "log":
		level := a.Level
		if level == "" {
			level = events.LevelInfo
		}
		c.node.LogEvent(ctx, events.Event{Name: events.WSHook, AppID: appID, Username: c.User.Username, IP: c.User.IP, Level: level,
			Message: a.Message, Data: map[string]any{"hookId": st.HookID, "hook": st.HookName, "userId": c.User.UserID}})
	}
	if err != nil {
		c.node.Log().Warn("realtime: hook action failed", "app", appID, "hook", st.HookID, "action", a.Type, "err", err)
	}
}
