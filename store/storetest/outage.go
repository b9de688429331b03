package storetest

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/url"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/store"
)

// Outage is a switch between a store and its database. Down cuts the database off, Up restores
// it; the store itself is never reopened. Its methods are safe to call from any goroutine.
//
// On PostgreSQL the store reaches the server through an in-process TCP proxy: Down closes the
// proxy's listener (new connections are refused, ECONNREFUSED) and every proxied connection (an
// in-flight query or transaction fails with the driver's broken-connection error and the server
// rolls the transaction back), and Up listens again on the same address.
//
// On SQLite the store's driver connections are wrapped: while down, opening a connection fails
// with an I/O error on the database file (EIO), and every call on an existing connection
// (statement, row, commit) fails with an error that is both driver.ErrBadConn and EIO; a
// transaction that was open is rolled back, as it would be by a connection that died. Every
// connection that was open when Down was called stays dead after Up, so database/sql discards
// it and opens a new one, as it does for pgx connections after a PostgreSQL outage.
//
// IsOutage classifies the errors either dialect returns.
type Outage struct {
	t     testing.TB
	mu    sync.Mutex
	down  bool
	epoch uint64 // incremented by Down: connections of an older epoch are dead
	proxy *tcpProxy
	file  string // the SQLite file, for error messages
}

// OpenFaulty returns a migrated throwaway store of the given dialect ("sqlite" or "pg"), like
// Open, whose database connections pass through the returned Outage switch (up at first).
// Migrations run before it returns, with the database up. For "pg" without CHORUS_TEST_PG_DSN
// it skips, or fails when CI=true. The store, the proxy and the schema are closed and dropped
// when the test ends.
func OpenFaulty(t testing.TB, dialect string) (*store.Store, *Outage) {
	t.Helper()
	ctx := context.Background()
	o := &Outage{t: t}
	var st *store.Store
	var err error
	switch dialect {
	case "sqlite":
		o.file = filepath.Join(t.TempDir(), "chorus.db")
		st, err = store.OpenWrapped(ctx, o.file, func(c driver.Connector) driver.Connector {
			return &faultyConnector{Connector: c, o: o}
		})
	case "pg":
		dsn := PGSchemaDSN(t)
		u, perr := url.Parse(dsn)
		if perr != nil {
			t.Fatalf("parse %s: %v", PGEnv, perr)
		}
		p, perr := startProxy(u.Host)
		if perr != nil {
			t.Fatalf("start the PostgreSQL proxy: %v", perr)
		}
		t.Cleanup(p.close) // registered before the store's Close, so it runs after it
		o.proxy = p
		u.Host = p.addr
		st, err = store.Open(ctx, u.String())
	default:
		t.Fatalf("unknown dialect %q", dialect)
	}
	if err != nil {
		t.Fatalf("open %s store: %v", dialect, err)
	}
	t.Cleanup(func() { _ = st.Close() })
	if _, err := st.Migrate(ctx); err != nil {
		t.Fatalf("migrate %s store: %v", dialect, err)
	}
	return st, o
}

// Down cuts the database off: new connections fail, in-flight operations fail, and the
// connections open now never work again. Calling it while down does nothing.
func (o *Outage) Down() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.down {
		return
	}
	o.down = true
	o.epoch++
	if o.proxy != nil {
		o.proxy.down()
	}
}

// Up restores the database; the store works again without being reopened (its first calls
// may still meet a dead pooled connection: see IsOutage). Calling it while up does nothing.
// Should the proxy fail to listen again on its address, Up reports it with t.Errorf (it may run
// on any goroutine) and the database stays down.
func (o *Outage) Up() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if !o.down {
		return
	}
	if o.proxy != nil {
		if err := o.proxy.up(); err != nil {
			o.t.Errorf("storetest: restore the database: %v", err)
			return
		}
	}
	o.down = false
}

// DownFor cuts the database off for d and then restores it, blocking meanwhile. Run it in a
// goroutine to have an outage in the middle of calls.
func (o *Outage) DownFor(d time.Duration) {
	o.Down()
	time.Sleep(d) // the outage's length, not a wait for a condition
	o.Up()
}

// IsDown reports whether the database is cut off.
func (o *Outage) IsDown() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.down
}

// alive reports whether a connection opened in epoch may still be used.
func (o *Outage) alive(epoch uint64) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return !o.down && epoch == o.epoch
}

// currentEpoch returns the epoch for a new connection, or false while down.
func (o *Outage) currentEpoch() (uint64, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.epoch, !o.down
}

// IsOutage reports whether err is what a store call returns when its database is unreachable or
// its connection broke (store.IsUnavailable, which holds the measurements).
func IsOutage(err error) bool { return store.IsUnavailable(err) }

// ---- SQLite: a connector whose connections fail while the database is down ----

// outageErr is what a call on a SQLite connection returns while down: driver.ErrBadConn (so
// database/sql discards the connection) and an I/O error on the database file.
func (o *Outage) outageErr(op string) error {
	return fmt.Errorf("storetest outage: %w: %w", driver.ErrBadConn, &fs.PathError{Op: op, Path: o.file, Err: syscall.EIO})
}

type faultyConnector struct {
	driver.Connector
	o *Outage
}

func (c *faultyConnector) Connect(ctx context.Context) (driver.Conn, error) {
	epoch, up := c.o.currentEpoch()
	if !up {
		return nil, &fs.PathError{Op: "open", Path: c.o.file, Err: syscall.EIO}
	}
	conn, err := c.Connector.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &faultyConn{Conn: conn, o: c.o, epoch: epoch}, nil
}

// faultyConn forwards every optional interface the modernc connection implements (see
// sqlite.NewConnector's doc), failing each call while its epoch is not alive.
type faultyConn struct {
	driver.Conn
	o     *Outage
	epoch uint64
}

func (c *faultyConn) Unwrap() driver.Conn { return c.Conn }

func (c *faultyConn) check(op string) error {
	if c.o.alive(c.epoch) {
		return nil
	}
	return c.o.outageErr(op)
}

func (c *faultyConn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

func (c *faultyConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if err := c.check("read"); err != nil {
		return nil, err
	}
	var s driver.Stmt
	var err error
	if p, ok := c.Conn.(driver.ConnPrepareContext); ok {
		s, err = p.PrepareContext(ctx, query)
	} else {
		s, err = c.Conn.Prepare(query)
	}
	if err != nil {
		return nil, err
	}
	return &faultyStmt{Stmt: s, c: c}, nil
}

func (c *faultyConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

func (c *faultyConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if err := c.check("write"); err != nil {
		return nil, err
	}
	var tx driver.Tx
	var err error
	if b, ok := c.Conn.(driver.ConnBeginTx); ok {
		tx, err = b.BeginTx(ctx, opts)
	} else {
		tx, err = c.Conn.Begin() //nolint:staticcheck // the driver has no BeginTx
	}
	if err != nil {
		return nil, err
	}
	return &faultyTx{Tx: tx, c: c}, nil
}

func (c *faultyConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	e, ok := c.Conn.(driver.ExecerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	if err := c.check("write"); err != nil {
		return nil, err
	}
	return e.ExecContext(ctx, query, args)
}

func (c *faultyConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	q, ok := c.Conn.(driver.QueryerContext)
	if !ok {
		return nil, driver.ErrSkip
	}
	if err := c.check("read"); err != nil {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, query, args)
	if err != nil {
		return nil, err
	}
	return &faultyRows{Rows: rows, c: c}, nil
}

func (c *faultyConn) Ping(ctx context.Context) error {
	if err := c.check("read"); err != nil {
		return err
	}
	if p, ok := c.Conn.(driver.Pinger); ok {
		return p.Ping(ctx)
	}
	return nil
}

func (c *faultyConn) ResetSession(ctx context.Context) error {
	if !c.o.alive(c.epoch) {
		return driver.ErrBadConn
	}
	if r, ok := c.Conn.(driver.SessionResetter); ok {
		return r.ResetSession(ctx)
	}
	return nil
}

func (c *faultyConn) IsValid() bool {
	if !c.o.alive(c.epoch) {
		return false
	}
	if v, ok := c.Conn.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

func (c *faultyConn) CheckNamedValue(nv *driver.NamedValue) error {
	if n, ok := c.Conn.(driver.NamedValueChecker); ok {
		return n.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

type faultyTx struct {
	driver.Tx
	c *faultyConn
}

// Commit while down rolls the transaction back and fails: the connection died before COMMIT
// reached the database.
func (t *faultyTx) Commit() error {
	if err := t.c.check("write"); err != nil {
		_ = t.Tx.Rollback()
		return err
	}
	return t.Tx.Commit()
}

type faultyStmt struct {
	driver.Stmt
	c *faultyConn
}

func (s *faultyStmt) Exec(args []driver.Value) (driver.Result, error) {
	if err := s.c.check("write"); err != nil {
		return nil, err
	}
	return s.Stmt.Exec(args) //nolint:staticcheck // forwarding the legacy method
}

func (s *faultyStmt) Query(args []driver.Value) (driver.Rows, error) {
	if err := s.c.check("read"); err != nil {
		return nil, err
	}
	rows, err := s.Stmt.Query(args) //nolint:staticcheck // forwarding the legacy method
	if err != nil {
		return nil, err
	}
	return &faultyRows{Rows: rows, c: s.c}, nil
}

func (s *faultyStmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if err := s.c.check("write"); err != nil {
		return nil, err
	}
	if e, ok := s.Stmt.(driver.StmtExecContext); ok {
		return e.ExecContext(ctx, args)
	}
	vals, err := namedToValues(args)
	if err != nil {
		return nil, err
	}
	return s.Stmt.Exec(vals) //nolint:staticcheck // the driver has no ExecContext
}

func (s *faultyStmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if err := s.c.check("read"); err != nil {
		return nil, err
	}
	var rows driver.Rows
	var err error
	if q, ok := s.Stmt.(driver.StmtQueryContext); ok {
		rows, err = q.QueryContext(ctx, args)
	} else {
		var vals []driver.Value
		if vals, err = namedToValues(args); err == nil {
			rows, err = s.Stmt.Query(vals) //nolint:staticcheck // the driver has no QueryContext
		}
	}
	if err != nil {
		return nil, err
	}
	return &faultyRows{Rows: rows, c: s.c}, nil
}

func namedToValues(args []driver.NamedValue) ([]driver.Value, error) {
	out := make([]driver.Value, len(args))
	for i, a := range args {
		if a.Name != "" {
			return nil, errors.New("storetest: named parameters are not supported by this driver")
		}
		out[i] = a.Value
	}
	return out, nil
}

// faultyRows fails the next row once the database is down: the rest of a result set never
// arrives over a dead connection.
type faultyRows struct {
	driver.Rows
	c *faultyConn
}

func (r *faultyRows) Next(dest []driver.Value) error {
	if err := r.c.check("read"); err != nil {
		return err
	}
	return r.Rows.Next(dest)
}

// ---- PostgreSQL: a TCP proxy that refuses and cuts connections while down ----

type tcpProxy struct {
	target string
	addr   string // the proxy's fixed host:port

	mu     sync.Mutex
	ln     net.Listener // nil while down
	conns  map[net.Conn]struct{}
	closed bool
	wg     sync.WaitGroup
}

func startProxy(target string) (*tcpProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &tcpProxy{target: target, addr: ln.Addr().String(), conns: map[net.Conn]struct{}{}}
	p.serve(ln)
	return p, nil
}

// serve makes ln the proxy's listener and accepts on it until it is closed. Callers hold mu or
// own p exclusively.
func (p *tcpProxy) serve(ln net.Listener) {
	p.ln = ln
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		for {
			client, err := ln.Accept()
			if err != nil {
				return // the listener was closed by down or close
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.pipe(client)
			}()
		}
	}()
}

// pipe connects client to the target until either side ends or the proxy cuts both.
func (p *tcpProxy) pipe(client net.Conn) {
	server, err := net.DialTimeout("tcp", p.target, 5*time.Second)
	if err != nil {
		_ = client.Close()
		return
	}
	p.mu.Lock()
	if p.ln == nil || p.closed { // went down while dialing
		p.mu.Unlock()
		_ = client.Close()
		_ = server.Close()
		return
	}
	p.conns[client] = struct{}{}
	p.conns[server] = struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(server, client); done <- struct{}{} }()
	go func() { _, _ = io.Copy(client, server); done <- struct{}{} }()
	<-done
	_ = client.Close()
	_ = server.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, client)
	delete(p.conns, server)
	p.mu.Unlock()
}

// down closes the listener (the port now refuses connections) and every proxied connection.
// Callers hold the Outage's lock, which serializes down and up.
func (p *tcpProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
}

// up listens on the proxy's address again, retrying for a few seconds should the port not be
// free yet.
func (p *tcpProxy) up() error {
	deadline := time.Now().Add(5 * time.Second)
	for {
		ln, err := net.Listen("tcp", p.addr)
		if err == nil {
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.closed {
				return ln.Close()
			}
			p.serve(ln)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("listen again on %s: %w", p.addr, err)
		}
		time.Sleep(50 * time.Millisecond) // poll interval while the port frees up
	}
}

// close stops the proxy for good and waits for its goroutines.
func (p *tcpProxy) close() {
	p.mu.Lock()
	p.closed = true
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}
