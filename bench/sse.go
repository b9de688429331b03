package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/stream"
)

// The events phase's client side (events.go): a light SSE client for GET /api/events, and the
// process memory the streams cost.

// ---- a light SSE client ----

// streamDialers is how many streams are opened at once.
const streamDialers = 16

// eventsAddr is the host:port and path of the stream of the Chorus whose MCP endpoint is mcpURL.
func eventsAddr(mcpURL string) (addr, path string, err error) {
	u, err := url.Parse(mcpURL)
	if err != nil || u.Host == "" {
		return "", "", fmt.Errorf("the MCP endpoint %q is not a URL with a host", mcpURL)
	}
	if u.Scheme != "http" {
		return "", "", fmt.Errorf("the events phase's light client speaks plain http only, not %s (%s)", u.Scheme, mcpURL)
	}
	addr = u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), "80")
	}
	return addr, stream.Path, nil
}

// sseConn is one open stream, kept as light as a client can be so that the memory the phase
// measures is the server's: a raw connection, the response read through a small bufio reader,
// and one goroutine (read) per stream.
type sseConn struct {
	conn net.Conn
	body *bufio.Reader
}

// sseEvent is one frame: its event name and its data (an event of GET /api/events).
type sseEvent struct {
	ID, Event string
	Data      store.EventWire
}

// dialSSE opens GET path on addr with key and reads up to the stream's first "retry:" line: by
// then the server has subscribed the stream (app.OpenEvents), so every later event reaches it.
func dialSSE(ctx context.Context, addr, path, key string) (*sseConn, error) {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return nil, err
	}
	req := "GET " + path + " HTTP/1.1\r\nHost: " + addr + "\r\nAccept: text/event-stream\r\n"
	if key != "" {
		req += "Authorization: Bearer " + key + "\r\n"
	}
	if _, err := io.WriteString(conn, req+"\r\n"); err != nil {
		conn.Close()
		return nil, err
	}
	c, err := readSSEHead(conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	return c, nil
}

// readSSEHead reads the response head and the body up to the first retry: line.
func readSSEHead(conn net.Conn) (*sseConn, error) {
	resp, err := http.ReadResponse(bufio.NewReaderSize(conn, 512), nil)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return nil, fmt.Errorf("GET %s: %s %s", stream.Path, resp.Status, strings.TrimSpace(string(b)))
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return nil, fmt.Errorf("GET %s: Content-Type %q, not text/event-stream", stream.Path, ct)
	}
	c := &sseConn{conn: conn, body: bufio.NewReaderSize(resp.Body, 512)}
	for {
		line, err := c.body.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("GET %s: the stream ended before its retry: line: %w", stream.Path, err)
		}
		if strings.HasPrefix(line, "retry:") {
			return c, nil
		}
	}
}

// read calls got with each event frame and the time its data line was read, until the stream
// ends; then once more with a zero sseEvent.
func (c *sseConn) read(got func(sseEvent, time.Time)) {
	defer got(sseEvent{}, time.Now())
	_ = parseSSE(c.body, got)
}

// parseSSE reads frames from r: comments and retry lines are passed over, and each frame with
// an event name is handed to got with the time its data line was read. It returns r's error.
func parseSSE(r *bufio.Reader, got func(sseEvent, time.Time)) error {
	var (
		ev sseEvent
		at time.Time
	)
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "":
			if ev.Event != "" {
				got(ev, at)
			}
			ev = sseEvent{}
		case strings.HasPrefix(line, "id: "):
			ev.ID = line[len("id: "):]
		case strings.HasPrefix(line, "event: "):
			ev.Event = line[len("event: "):]
		case strings.HasPrefix(line, "data: "):
			at = time.Now()
			_ = json.Unmarshal([]byte(line[len("data: "):]), &ev.Data)
		}
	}
}

func (c *sseConn) close() { _ = c.conn.Close() }

// openStreams opens n streams, streamDialers at a time; on an error it closes what it opened.
func openStreams(ctx context.Context, n int, open func(context.Context, int) (*sseConn, error)) ([]*sseConn, error) {
	out := make([]*sseConn, n)
	errs := make([]error, n)
	next := make(chan int)
	go func() {
		defer close(next)
		for i := range n {
			next <- i
		}
	}()
	parallel(min(streamDialers, n), func(int) {
		for i := range next {
			if ctx.Err() != nil {
				errs[i] = ctx.Err()
				continue
			}
			out[i], errs[i] = open(ctx, i)
		}
	})
	if err := errors.Join(errs...); err != nil {
		closeStreams(out)
		return nil, err
	}
	return out, nil
}

func closeStreams(cs []*sseConn) {
	for _, c := range cs {
		if c != nil {
			c.close()
		}
	}
}

// ---- memory ----

// memSample is the process's memory in use after a collection.
type memSample struct {
	HeapInuse  uint64 `json:"heapInuse"`
	StackInuse uint64 `json:"stackInuse"`
	Goroutines int    `json:"goroutines"`
}

// sampleMemory collects garbage (twice: finalizers run in between) and reads the memory in use.
func sampleMemory() memSample {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return memSample{HeapInuse: m.HeapInuse, StackInuse: m.StackInuse, Goroutines: runtime.NumGoroutine()}
}

// memDelta is what a set of open streams added to the process: bytes (heap and stacks, which
// hold the goroutines) and goroutines. Bytes may be negative when other work freed more.
type memDelta struct {
	Bytes      int64 `json:"bytes"`
	HeapBytes  int64 `json:"heapBytes"`
	StackBytes int64 `json:"stackBytes"`
	Goroutines int   `json:"goroutines"`
}

func (m memSample) since(before memSample) memDelta {
	heap := int64(m.HeapInuse) - int64(before.HeapInuse)
	stack := int64(m.StackInuse) - int64(before.StackInuse)
	return memDelta{Bytes: heap + stack, HeapBytes: heap, StackBytes: stack, Goroutines: m.Goroutines - before.Goroutines}
}

// streamMemory is the events phase's memory figures: the streams' cost to the whole process
// (client and server, both in the bench's process), the clients' own cost measured the same way
// against a server that keeps nothing per connection, and the difference per stream.
type streamMemory struct {
	Streams int      `json:"streams"`
	Clients memDelta `json:"clientsOnly"`
	Chorus  memDelta `json:"withChorus"`
}

// PerStream is the server's bytes per open stream: (with Chorus - clients only) / streams.
func (m *streamMemory) PerStream() float64 {
	if m.Streams == 0 {
		return 0
	}
	return float64(m.Chorus.Bytes-m.Clients.Bytes) / float64(m.Streams)
}

// GoroutinesPerStream is the server's goroutines per open stream.
func (m *streamMemory) GoroutinesPerStream() float64 {
	if m.Streams == 0 {
		return 0
	}
	return float64(m.Chorus.Goroutines-m.Clients.Goroutines) / float64(m.Streams)
}

func (m *streamMemory) target() targetCheck {
	return targetCheck{Name: "server memory per open stream", Value: m.PerStream() / 1024, Limit: streamMemTarget / 1024,
		Unit: "KiB", Pass: m.Streams > 0 && m.PerStream() <= streamMemTarget}
}

func (m *streamMemory) note() string {
	per := float64(max(m.Streams, 1))
	return fmt.Sprintf("Memory (heap in use + stacks in use, after GC, the streams idle 2 s): %d streams added %.1f KiB "+
		"each to the bench's process (heap %.1f, stacks %.1f; %.2f goroutines each); the same clients against a server "+
		"that keeps nothing per connection added %.1f KiB each (%.2f goroutines), so Chorus keeps %.1f KiB and %.2f "+
		"goroutines per open stream. The clients run in the same process: one goroutine and a 512-byte reader each.",
		m.Streams, float64(m.Chorus.Bytes)/1024/per, float64(m.Chorus.HeapBytes)/1024/per, float64(m.Chorus.StackBytes)/1024/per,
		float64(m.Chorus.Goroutines)/per, float64(m.Clients.Bytes)/1024/per, float64(m.Clients.Goroutines)/per,
		m.PerStream()/1024, m.GoroutinesPerStream())
}

// baselineHead is the stand-in server's whole answer: the head of GET /api/events and its first
// chunk, the retry: line.
var baselineHead = func() string {
	body := "retry: 2000\n\n"
	return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n" +
		"Transfer-Encoding: chunked\r\n\r\n" + fmt.Sprintf("%x\r\n%s\r\n", len(body), body)
}()

// measureClientBaseline opens n of the phase's clients against a stand-in SSE server that
// answers each connection with a stream head and a retry: line and then keeps only the
// connection (no goroutine, no buffer), and measures what they add to the process.
func measureClientBaseline(ctx context.Context, n int) (*streamMemory, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	var (
		mu   sync.Mutex
		held []net.Conn
	)
	defer func() {
		ln.Close()
		mu.Lock()
		for _, c := range held {
			c.Close()
		}
		mu.Unlock()
	}()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = io.WriteString(c, baselineHead)
			mu.Lock()
			held = append(held, c)
			mu.Unlock()
		}
	}()
	before := sampleMemory()
	cs, err := openStreams(ctx, n, func(ctx context.Context, _ int) (*sseConn, error) {
		return dialSSE(ctx, ln.Addr().String(), stream.Path, "")
	})
	if err != nil {
		return nil, err
	}
	defer closeStreams(cs)
	for _, c := range cs {
		go c.read(func(sseEvent, time.Time) {})
	}
	time.Sleep(2 * time.Second)
	return &streamMemory{Clients: sampleMemory().since(before)}, nil
}
