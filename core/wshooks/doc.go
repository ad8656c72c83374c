// Package wshooks owns an application's WebSocket hooks as a resource (SPEC 4.9: list,
// create, update, delete, at most 20 per app) and runs them for the socket channels: it
// keeps each app's hooks compiled (hooks.Compile) per node, drops the compiled form on
// every node when the owner changes a hook (cluster bus), and plans the actions of a client
// message (realtime.Planner).
package wshooks
