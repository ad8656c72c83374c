package httpapi

import "testing"

// TestSocketPath: the paths the server's listener serves itself are the socket routes'
// of the table, and no other.
func TestSocketPath(t *testing.T) {
	for path, want := range map[string]bool{
		"/api/client/ws":              true,
		"/api/apps/app-1/ws/connect":  true,
		"/api/apps/app-1/ws/connect/": false,
		"/api/client/ws/":             false,
		"/api/client/wsx":             false,
		"/api/client":                 false,
		"/api/apps//ws/connect":       false,
		"/api/apps/a/b/ws/connect":    false,
		"/api/apps/app-1/ws":          false,
		"/api/client/init":            false,
		"/":                           false,
		"":                            false,
	} {
		if got := SocketPath(path); got != want {
			t.Errorf("SocketPath(%q) = %v, want %v", path, got, want)
		}
	}
	sockets := 0
	for _, r := range routeIndex.sorted {
		if r.op.sock == "" {
			continue
		}
		sockets++
		if !SocketPath(r.path) && !SocketPath(replaceParams(r.path)) {
			t.Errorf("socket route %s is not a SocketPath", r.key())
		}
	}
	if sockets != 2 {
		t.Errorf("%d socket routes in the table, want 2 (the program's, the dashboard's)", sockets)
	}
}

// replaceParams puts a value in each :param segment of a route's path.
func replaceParams(path string) string {
	out := []byte{}
	for i := 0; i < len(path); i++ {
		if path[i] == ':' {
			out = append(out, 'x')
			for i < len(path) && path[i] != '/' {
				i++
			}
			i--
			continue
		}
		out = append(out, path[i])
	}
	return string(out)
}
