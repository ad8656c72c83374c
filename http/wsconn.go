package httpapi

import (
	"bufio"
	"net"
	"net/http"
	"time"
)

// wsDeadlineSlack is how much later than the write deadline in place a new one may be
// and still not be set: a socket's writer asks for now+wsWriteWait before every frame,
// and setting a deadline re-arms a runtime timer each time (about a tenth of a
// broadcast's server CPU per socket). A write then times out after at least
// wsWriteWait-wsDeadlineSlack.
const wsDeadlineSlack = time.Second

// socketWriter is the ResponseWriter handed to the upgrader: its Hijack answers the
// connection as a socketConn.
type socketWriter struct{ http.ResponseWriter }

func (w socketWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	conn, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	// The socket's frames skip the envelope wrapper: they are never net/http's answers.
	if e, ok := conn.(*envelopeConn); ok {
		conn = e.Conn
	}
	return &socketConn{Conn: conn}, brw, nil
}

// socketConn is a socket's connection once upgraded: it leaves out write deadlines that
// hardly move the one in place. gorilla/websocket sets them only while it holds its write
// lock (and the upgrade, before), so writeDeadline needs no lock of its own.
type socketConn struct {
	net.Conn
	writeDeadline time.Time
}

func (c *socketConn) SetWriteDeadline(t time.Time) error {
	if !t.IsZero() && !c.writeDeadline.IsZero() && !t.Before(c.writeDeadline) && t.Sub(c.writeDeadline) < wsDeadlineSlack {
		return nil
	}
	c.writeDeadline = t
	return c.Conn.SetWriteDeadline(t)
}

func (c *socketConn) SetDeadline(t time.Time) error {
	c.writeDeadline = t
	return c.Conn.SetDeadline(t)
}
