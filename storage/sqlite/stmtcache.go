package sqlite

import (
	"context"
	"database/sql/driver"
	"errors"
	"reflect"
	"sync"

	msqlite "modernc.org/sqlite"
)

// stmtCacheSize bounds the statements each connection keeps prepared. The store's
// queries are of fixed text but for the IN lists and multi-row inserts of a few sizes,
// so a few hundred hold every hot one; a statement is a few KiB of SQLite memory.
const stmtCacheSize = 200

// cachingConnector opens the driver's connections wrapped in cachingConn: every query
// and statement the store runs with ExecContext or QueryContext (on the pool or in a
// transaction) is parsed once per connection, not at every call. Parsing was most of a
// point read's cost and a good part of a small write's (an app's read at each update,
// a log insert, a session's save): modernc.org/sqlite parses again on each call that is
// not a prepared *sql.Stmt.
type cachingConnector struct {
	inner driver.Connector
	size  int
}

func newCachingConnector(dsn string, size int) (driver.Connector, error) {
	inner, err := msqlite.NewConnector(dsn)
	if err != nil {
		return nil, err
	}
	return cachingConnector{inner: inner, size: size}, nil
}

func (c cachingConnector) Connect(ctx context.Context) (driver.Conn, error) {
	conn, err := c.inner.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return newCachingConn(conn, c.size)
}

func (c cachingConnector) Driver() driver.Driver { return c.inner.Driver() }

// sqliteConn is what the wrapped connection of modernc.org/sqlite offers and the
// wrapper hands on.
type sqliteConn interface {
	driver.Conn
	driver.ConnBeginTx
	driver.ConnPrepareContext
	driver.Pinger
	driver.SessionResetter
	driver.Validator
}

// cachingConn keeps its connection's statements prepared, by query text, up to size of
// them. database/sql uses a connection from one goroutine at a time (a Rows' Close from
// its context watcher included: it holds the connection's lock), so the cache needs no
// lock of its own; mu is there for the day that changes, and costs nothing uncontended.
//
// A statement in use by open Rows is not handed out again until they close: a second
// query of the same text on the connection meanwhile (in a transaction, while the
// first's rows are read) gets a statement of its own, closed after use. A statement
// whose run failed is closed rather than kept, so that no state of a failed or
// interrupted run reaches the next one.
type cachingConn struct {
	sqliteConn
	size int

	mu    sync.Mutex
	stmts map[string]*cachedStmt
}

type cachedStmt struct {
	st   stmtContext
	busy bool // open Rows are reading it
	// gone: evicted (or the connection closed) while busy; closed when its rows close.
	gone bool
}

type stmtContext interface {
	driver.Stmt
	driver.StmtExecContext
	driver.StmtQueryContext
}

func newCachingConn(conn driver.Conn, size int) (driver.Conn, error) {
	sc, ok := conn.(sqliteConn)
	if !ok {
		_ = conn.Close()
		return nil, errors.New("sqlite: driver connection lacks the context interfaces the statement cache needs")
	}
	return &cachingConn{sqliteConn: sc, size: size, stmts: make(map[string]*cachedStmt)}, nil
}

// take answers the cached statement of query, marked busy, preparing it if needed; own
// reports a statement of the caller's alone, closed after its use (the cached one is in
// use by open rows).
func (c *cachingConn) take(ctx context.Context, query string) (cs *cachedStmt, own bool, err error) {
	c.mu.Lock()
	cs, ok := c.stmts[query]
	if ok && !cs.busy {
		cs.busy = true
		c.mu.Unlock()
		return cs, false, nil
	}
	c.mu.Unlock()
	ds, err := c.sqliteConn.PrepareContext(ctx, query)
	if err != nil {
		return nil, false, err
	}
	st, ok2 := ds.(stmtContext)
	if !ok2 {
		_ = ds.Close()
		return nil, false, errors.New("sqlite: driver statement lacks the context methods")
	}
	cs = &cachedStmt{st: st, busy: true}
	if ok { // the cached one is in use: this one is the caller's alone
		return cs, true, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, taken := c.stmts[query]; taken { // kept meanwhile: this one stays the caller's
		return cs, true, nil
	}
	if len(c.stmts) >= c.size {
		c.evictOneLocked()
	}
	c.stmts[query] = cs
	return cs, false, nil
}

// evictOneLocked drops one statement (map order: as good as random, which suits a
// cache that holds every hot query anyway), closing it unless rows still read it.
func (c *cachingConn) evictOneLocked() {
	for q := range c.stmts {
		c.dropLocked(q)
		return
	}
}

// dropLocked takes query's statement out of the cache and closes it, or, when rows still
// read it, marks it for the rows' end to close.
func (c *cachingConn) dropLocked(query string) {
	cs := c.stmts[query]
	delete(c.stmts, query)
	if cs.busy {
		cs.gone = true
	} else {
		_ = cs.st.Close()
	}
}

// release ends a use of cs: ok false (the run failed) closes it and drops it from the
// cache, so the next call prepares afresh.
func (c *cachingConn) release(query string, cs *cachedStmt, own, ok bool) {
	if own {
		_ = cs.st.Close()
		return
	}
	c.mu.Lock()
	cs.busy = false
	closeIt := cs.gone
	if !ok && !cs.gone {
		if c.stmts[query] == cs {
			delete(c.stmts, query)
		}
		closeIt = true
	}
	c.mu.Unlock()
	if closeIt {
		_ = cs.st.Close()
	}
}

// ExecContext implements driver.ExecerContext with the cached statement.
func (c *cachingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	cs, own, err := c.take(ctx, query)
	if err != nil {
		return nil, err
	}
	res, err := cs.st.ExecContext(ctx, args)
	c.release(query, cs, own, err == nil)
	return res, err
}

// QueryContext implements driver.QueryerContext with the cached statement; it is
// given back when the rows close.
func (c *cachingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	cs, own, err := c.take(ctx, query)
	if err != nil {
		return nil, err
	}
	rows, err := cs.st.QueryContext(ctx, args)
	if err != nil {
		c.release(query, cs, own, false)
		return nil, err
	}
	return &cachedRows{Rows: rows, conn: c, query: query, cs: cs, own: own}, nil
}

// Close closes the cached statements, then the connection.
func (c *cachingConn) Close() error {
	c.mu.Lock()
	for q := range c.stmts {
		c.dropLocked(q)
	}
	c.mu.Unlock()
	return c.sqliteConn.Close()
}

// cachedRows hands its statement back to the cache when closed. It passes on the
// column-type methods of the driver's rows (database/sql's ColumnTypes).
type cachedRows struct {
	driver.Rows
	conn   *cachingConn
	query  string
	cs     *cachedStmt
	own    bool
	closed bool
}

func (r *cachedRows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.Rows.Close()
	r.conn.release(r.query, r.cs, r.own, err == nil)
	return err
}

func (r *cachedRows) ColumnTypeDatabaseTypeName(i int) string {
	if t, ok := r.Rows.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return t.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

func (r *cachedRows) ColumnTypeScanType(i int) reflect.Type {
	if t, ok := r.Rows.(driver.RowsColumnTypeScanType); ok {
		return t.ColumnTypeScanType(i)
	}
	return reflect.TypeFor[any]()
}

func (r *cachedRows) ColumnTypeNullable(i int) (nullable, ok bool) {
	if t, is := r.Rows.(driver.RowsColumnTypeNullable); is {
		return t.ColumnTypeNullable(i)
	}
	return false, false
}

func (r *cachedRows) ColumnTypeLength(i int) (length int64, ok bool) {
	if t, is := r.Rows.(driver.RowsColumnTypeLength); is {
		return t.ColumnTypeLength(i)
	}
	return 0, false
}

func (r *cachedRows) ColumnTypePrecisionScale(i int) (precision, scale int64, ok bool) {
	if t, is := r.Rows.(driver.RowsColumnTypePrecisionScale); is {
		return t.ColumnTypePrecisionScale(i)
	}
	return 0, 0, false
}

var (
	_ driver.ExecerContext  = (*cachingConn)(nil)
	_ driver.QueryerContext = (*cachingConn)(nil)
	_ driver.Connector      = cachingConnector{}
)
