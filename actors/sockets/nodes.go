package sockets

import (
	"context"
	"log/slog"
	"time"

	"github.com/keyward/keyward/actors/dashboard"
	"github.com/keyward/keyward/actors/session"
	"github.com/keyward/keyward/actors/wire"
	"github.com/keyward/keyward/core/events"
	"github.com/keyward/keyward/core/realtime"
)

// sessionNode is the Service as its client sockets' actors see it (session.Node), and
// dashboardNode as its dashboard sockets' actors see it (dashboard.Node): what they may
// ask of the node, and nothing of what http calls.
type (
	sessionNode   struct{ s *Service }
	dashboardNode struct{ s *Service }
)

var (
	_ session.Node   = sessionNode{}
	_ dashboard.Node = dashboardNode{}
)

func (n sessionNode) Now() time.Time    { return n.s.d.Now() }
func (n sessionNode) Log() *slog.Logger { return n.s.d.Log }

func (n sessionNode) ToUser(ctx context.Context, appID, userID string, m wire.Outgoing) error {
	return n.s.toUserMsg(ctx, appID, userID, m, 0, "")
}

func (n sessionNode) ToClients(ctx context.Context, appID string, m wire.Outgoing) error {
	return n.s.toClientsMsg(ctx, appID, m)
}

func (n sessionNode) ToDashboards(ctx context.Context, appID string, m wire.Outgoing) error {
	return n.s.toDashboardsMsg(ctx, appID, m)
}

func (n sessionNode) Kick(ctx context.Context, appID, userID, reason string) error {
	return n.s.kick(ctx, appID, userID, reason)
}

func (n sessionNode) Ban(ctx context.Context, appID, userID, reason string) error {
	return n.s.ban(ctx, appID, userID, reason)
}

func (n sessionNode) LogEvent(ctx context.Context, e events.Event) { n.s.logEvent(ctx, e) }

func (n sessionNode) Admit(ctx context.Context, appID string, info realtime.SessionInfo) error {
	return n.s.admitPresence(ctx, appID, info)
}

func (n sessionNode) Describe(ctx context.Context, appID string, info realtime.SessionInfo) error {
	return n.s.describe(ctx, appID, info)
}

func (n sessionNode) Plan(ctx context.Context, appID string, in realtime.HookInput) ([]realtime.HookAction, error) {
	if n.s.d.Hooks == nil {
		return nil, nil
	}
	return n.s.d.Hooks.Plan(ctx, appID, in)
}

func (n sessionNode) RevalidationFailed()        { n.s.stats.revalidationFailed.Add(1) }
func (n sessionNode) RevalidationClosed()        { n.s.stats.revalidationClosed.Add(1) }
func (n sessionNode) Bug(what string, err error) { n.s.bug(what, err) }

func (n dashboardNode) Now() time.Time              { return n.s.d.Now() }
func (n dashboardNode) RecheckEvery() time.Duration { return n.s.dashboardRecheck() }
func (n dashboardNode) Bug(what string, err error)  { n.s.bug(what, err) }
func (n dashboardNode) Online(ctx context.Context, appID string) (int, error) {
	return n.s.Online(ctx, appID)
}

func (n dashboardNode) Sessions(ctx context.Context, appID string) ([]realtime.SessionInfo, error) {
	return n.s.Sessions(ctx, appID)
}

func (n dashboardNode) Chat(ctx context.Context, appID, userID, message string) (bool, error) {
	return n.s.Chat(ctx, appID, userID, message)
}

func (n dashboardNode) Push(ctx context.Context, appID, userID string, payload map[string]any) (int, error) {
	return n.s.Push(ctx, appID, userID, payload)
}

func (n dashboardNode) Typing(ctx context.Context, appID, userID string, typing bool) error {
	return n.s.toUserMsg(ctx, appID, userID, wire.Outgoing{Type: wire.TypeTyping, Data: map[string]any{"typing": typing}}, 0, "")
}

func (n dashboardNode) Kick(ctx context.Context, appID, userID, reason string) (bool, error) {
	return n.s.Kick(ctx, appID, userID, reason)
}

func (n dashboardNode) Ban(ctx context.Context, appID, userID, reason string) error {
	return n.s.Ban(ctx, appID, userID, reason)
}

func (n dashboardNode) Command(ctx context.Context, appID, userID, command string, payload map[string]any) (int, error) {
	return n.s.Command(ctx, appID, userID, command, payload)
}

// dashboardRecheck is how often a dashboard socket's token is checked again.
func (s *Service) dashboardRecheck() time.Duration {
	if s.d.DashboardRecheck > 0 {
		return s.d.DashboardRecheck
	}
	return realtime.RevalidateEvery
}
