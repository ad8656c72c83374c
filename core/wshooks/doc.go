// Package wshooks owns an application's WebSocket hooks as a resource (SPEC 4.9: list,
// create, update, delete, at most 20 per app) and plans the actions of a client message
// (realtime.Planner). It keeps no compiled hooks of its own: Load reads and compiles an
// app's hooks for the app's actor, which loads them with the app's snapshot and reloads
// them on the same invalidation; a hook change stores app.hooks_change with the change
// (events.Change, with the request's audit entry), which reloads the app's actor on this
// node when it is stored and on every other from the event log. Plan asks the actor,
// which runs the pipeline it holds inside its Receive (app.Apps.Plan).
package wshooks
