//go:build !linux

package main

import "github.com/gorilla/websocket"

// readEpoll is Linux's; elsewhere each socket has a reader goroutine.
func readEpoll([]*websocket.Conn, string, *tally, <-chan struct{}) bool { return false }
