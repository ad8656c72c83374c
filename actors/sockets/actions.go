package sockets

import (
	"context"

	"github.com/keyward/keyward/actors/app"
	"github.com/keyward/keyward/actors/wire"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/realtime"
)

// carryOutPlan carries out the hook actions planned for a message of c, in its actor:
// an answer to the sender and a log line at once, the actions that need the cluster or
// storage in the job it answers (nil when none).
func (s *Service) carryOutPlan(c *Client, steps []realtime.HookAction) app.Job {
	var later []realtime.HookAction
	for _, st := range steps {
		switch st.Type {
		case "respond", "log":
			if len(later) == 0 {
				s.carryOut(context.Background(), c, st)
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

// carryOut performs one planned hook action for the sender c.
func (s *Service) carryOut(ctx context.Context, c *Client, st realtime.HookAction) {
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
		err = s.toUserMsg(ctx, appID, target, wire.Outgoing{Type: wire.TypeMessage, Data: map[string]any{"message": a.Message, "type": realtime.MessageType(a.MessageType)}}, 0, "")
	case "broadcast":
		err = s.toClientsMsg(ctx, appID, wire.Outgoing{Type: wire.TypeMessage, Data: map[string]any{"message": a.Message, "type": realtime.MessageType(a.MessageType)}})
	case "push_json":
		if st.Target == "all" {
			err = s.toClientsMsg(ctx, appID, wire.Outgoing{Type: wire.TypeCustom, Data: a.Payload})
		} else {
			err = s.toUserMsg(ctx, appID, target, wire.Outgoing{Type: wire.TypeCustom, Data: a.Payload}, 0, "")
		}
	case "kick":
		err = s.kick(ctx, appID, target, a.Reason)
	case "ban":
		err = s.ban(ctx, appID, target, a.Reason)
	case "log":
		level := a.Level
		if level == "" {
			level = events.LevelInfo
		}
		s.logEvent(ctx, events.Event{Name: events.WSHook, AppID: appID, Username: c.User.Username, IP: c.User.IP, Level: level,
			Message: a.Message, Data: map[string]any{"hookId": st.HookID, "hook": st.HookName, "userId": c.User.UserID}})
	}
	if err != nil {
		s.d.Log.Warn("realtime: hook action failed", "app", appID, "hook", st.HookID, "action", a.Type, "err", err)
	}
}
