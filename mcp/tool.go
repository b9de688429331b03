package mcp

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	oteltrace "go.opentelemetry.io/otel/trace"

	"github.com/chorus-dev/chorus/app"
	"github.com/chorus-dev/chorus/perm"
	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/workflows"
)

// effect classifies what a tool does to Chorus's data; it decides the MCP annotations (docs/rules.md §8.6)
// and whether the tool takes a requestId (docs/rules.md §8.5). The zero value is invalid on purpose: a
// table test rejects an entry that forgot it.
type effect int

const (
	// reads change nothing: readOnlyHint.
	reads effect = iota + 1
	// writes create or change data.
	writes
	// destroys deletes, closes, revokes or rejects: destructiveHint.
	destroys
)

// tool is one row of the tool table (every tool is one entry, and docs/tools.md is generated
// from the table): its name, the permission bit that gates it (perm.Public for none), what it
// does to data, the description the model reads, and the handler. Input and output shapes are
// the type parameters; their JSON schemas are inferred (see schema.go).
type tool[In, Out any] struct {
	Name  string
	Title string
	// Toolset is the lifecycle stage the tool serves (toolset.go, docs/rules.md §3.3).
	Toolset toolset
	Perm    perm.Bit
	// Effect is reads, writes or destroys.
	Effect effect
	// Idempotent marks a write that changes nothing when repeated with the same arguments.
	Idempotent bool
	// Strict refuses unknown argument keys instead of ignoring them (docs/rules.md §3.5), for a
	// tool where a misspelt key would silently change what the call does.
	Strict bool
	// ReadOnlyForm marks a tool that writes (Effect is not reads) but also serves read-only
	// connections, by changing nothing there (Call.Conn.ReadOnly): chorus_checkin,
	// chorus_get_notifications. Read-only connections list it as read-only.
	ReadOnlyForm bool
	Desc         string
	Run          func(ctx context.Context, d *Deps, call *Call, in In) (Out, error)
}

// Call is what a handler knows about the request beyond its arguments.
type Call struct {
	// Request is who calls, with the requestId (docs/rules.md §8.5) and its generation (see
	// runOnce); its Retry says an earlier call with this requestId and generation started and
	// its outcome is not recorded.
	app.Request
	Header http.Header
	// Conn is what the connection selected (toolsets, read-only mode): a tool with a
	// ReadOnlyForm changes nothing when Conn.ReadOnly is set.
	Conn Conn
}

// Deps are what tool handlers use: the store for reads and records, the lifecycle client for
// workflow updates, and the logger.
type Deps struct {
	Store *store.Store
	Flows *workflows.Client
	Log   *slog.Logger
	// CallTimeout bounds one tool call; zero means 60 seconds.
	CallTimeout time.Duration
	// Metrics records tool calls and refusals; nil records nothing.
	Metrics *Metrics
	// Tracer, when set, starts a span per tool call ("tool <name>"), the parent of the spans of
	// the Temporal calls, workflow, activities and SQL statements the call makes (docs/operations.md
	// "Tracing"); nil traces nothing.
	Tracer oteltrace.Tracer

	// Limits bound each API key's and each company's requests (limits.go); the zero value
	// limits nothing. `chorus serve` and `chorus dev` pass DefaultLimits unless told otherwise.
	Limits Limits
	// Edge says which Host names and Origins the server admits (edge.go); the zero value
	// admits loopback ones only.
	Edge EdgeOptions

	// touched remembers when this process last recorded a key's and an agent's use (uuid ->
	// time.Time), so a burst of one key's requests writes it once, not once per request.
	touched sync.Map
}

// app is the use-case layer over d's store, lifecycle client and logger; the tool handlers are
// adapters over its functions.
func (d *Deps) app() *app.App { return &app.App{Store: d.Store, Flows: d.Flows, Log: d.Log} }

// entry is a tool table row with its types erased, so rows of different types share a table.
type entry interface {
	spec() toolSpec
	build(d *Deps) (*builtTool, error)
	// outType is the Go type of the tool's result.
	outType() reflect.Type
}

type toolSpec struct {
	Name         string
	Toolset      toolset
	Perm         perm.Bit
	Effect       effect
	Idempotent   bool
	ReadOnlyForm bool
	Desc         string
	HasRun       bool
}

func (t tool[In, Out]) outType() reflect.Type { return reflect.TypeFor[Out]() }

func (t tool[In, Out]) spec() toolSpec {
	return toolSpec{Name: t.Name, Toolset: t.Toolset, Perm: t.Perm, Effect: t.Effect, Idempotent: t.Idempotent,
		ReadOnlyForm: t.ReadOnlyForm, Desc: t.Desc, HasRun: t.Run != nil}
}

// servesReadOnly reports whether a read-only connection lists the tool: it changes nothing, or
// it has a form that changes nothing (docs/rules.md §3.3).
func (s toolSpec) servesReadOnly() bool { return s.Effect == reads || s.ReadOnlyForm }

// builtTool is an entry made ready for the SDK: the MCP tool description and its handler.
// readOnlyTool is how read-only connections list a tool with a ReadOnlyForm (annotated as a read).
// inputSchema is the schema calls are checked against, bounds and all (docs/tools.md shows it).
type builtTool struct {
	spec         toolSpec
	tool         *mcpsdk.Tool
	readOnlyTool *mcpsdk.Tool
	inputSchema  *jsonschema.Schema
	handler      mcpsdk.ToolHandler
}

// maxCallBytes bounds the arguments of one mutating call, as normalized JSON without HTML
// escaping (plainJSON: a '<' counts one byte, not the six of \u003c): checked before anything
// reaches Temporal, whose payloads are encoded the same way (workflows.DataConverter), it keeps
// every update and activity payload far below Temporal's 2 MB limit whatever the schemas allow
// (docs/write-path.md, "Bounded state and payloads").
const maxCallBytes = app.MaxChangeBytes

// requestIDField is added to every mutating tool's input (docs/rules.md §8.5).
const requestIDField = "requestId"

// textResult is the Out type of tools whose result is a sentence rather than an object
// (docs/rules.md §3.7: "Idea <uuid> deleted"); it is sent as text content with no structuredContent.
type textResult string

func (t tool[In, Out]) build(d *Deps) (*builtTool, error) {
	in, err := inputSchema(reflect.TypeFor[In]())
	if err != nil {
		return nil, fmt.Errorf("%s: input schema: %w", t.Name, err)
	}
	if in.Type != "object" {
		return nil, fmt.Errorf("%s: input must be a struct", t.Name)
	}
	if in.Properties == nil {
		in.Properties = map[string]*jsonschema.Schema{}
	}
	if t.Effect != reads {
		// The rule is told once, in the server's instructions (prompts.go), not in every tool.
		one, most := 1, 128
		in.Properties[requestIDField] = &jsonschema.Schema{Type: "string", MinLength: &one, MaxLength: &most}
		in.PropertyOrder = append(in.PropertyOrder, requestIDField)
	}
	publishable(in)
	closeObjects(in)
	mt := &mcpsdk.Tool{Name: t.Name, Title: t.Title, Description: t.Desc, InputSchema: modelSchema(in), Annotations: annotations(t.spec())}
	isText := reflect.TypeFor[Out]() == reflect.TypeFor[textResult]()
	if !isText {
		out, err := outputSchema(reflect.TypeFor[Out]())
		if err != nil {
			return nil, fmt.Errorf("%s: output schema: %w", t.Name, err)
		}
		if out.Type == "object" {
			mt.OutputSchema = out
		}
	}
	bt := &builtTool{spec: t.spec(), tool: mt, inputSchema: in}
	if t.ReadOnlyForm {
		ro := *mt
		ro.Annotations = annotations(toolSpec{Effect: reads})
		bt.readOnlyTool = &ro
	}
	bt.handler = func(ctx context.Context, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
		start := requestStart(ctx)
		span := oteltrace.SpanFromContext(ctx)
		if d.Tracer != nil {
			ctx, span = d.Tracer.Start(ctx, "tool "+t.Name, oteltrace.WithSpanKind(oteltrace.SpanKindServer),
				oteltrace.WithAttributes(attribute.String("mcp.tool", t.Name)))
			defer span.End()
		}
		ctx, trace := workflows.WithTrace(ctx)
		res, err := t.call(ctx, d, in, req)
		if err != nil {
			span.SetStatus(codes.Error, "isError")
		}
		ref := refFrom(ctx)
		if err != nil {
			res = &mcpsdk.CallToolResult{IsError: true,
				Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: toolErrorText(ctx, d.Log, t.Name, err)}},
				Meta:    mcpsdk.Meta{refMetaKey: ref}}
		}
		d.Log.InfoContext(ctx, "tool call", callLogAttrs(ctx, t.Name, ref, req, trace, res, err, time.Since(start))...)
		d.Metrics.toolCall(t.Name, err, time.Since(start))
		return res, nil
	}
	return bt, nil
}

func annotations(s toolSpec) *mcpsdk.ToolAnnotations {
	no := false
	a := &mcpsdk.ToolAnnotations{OpenWorldHint: &no}
	switch s.Effect {
	case reads:
		a.ReadOnlyHint = true
		a.IdempotentHint = true
	case writes:
		a.DestructiveHint = &no
		a.IdempotentHint = s.Idempotent
	case destroys:
		yes := true
		a.DestructiveHint = &yes
		a.IdempotentHint = s.Idempotent
	}
	return a
}

// call runs one tool call: authorization, argument normalization, the requestId ledger, a
// deadline, the handler, and encoding of the result. Errors it returns become isError results.
func (t tool[In, Out]) call(ctx context.Context, d *Deps, schema *jsonschema.Schema, req *mcpsdk.CallToolRequest) (*mcpsdk.CallToolResult, error) {
	who, ok := principalFrom(ctx)
	if !ok {
		return nil, errors.New("no principal in context: the auth middleware did not run")
	}
	// The tool list is already filtered per permission set; check again so a cached or
	// misrouted server can never run a tool the key does not grant (docs/rules.md §3.4).
	if !who.Perms.Has(t.Perm) {
		return nil, toolNotFound(t.Name)
	}
	conn, _ := connFrom(ctx)
	if err := conn.refusal(t.spec()); err != nil {
		return nil, err
	}
	var raw json.RawMessage
	if req.Params != nil {
		raw = req.Params.Arguments
	}
	if t.Strict {
		if err := knownKeysOnly(schema, raw); err != nil {
			return nil, err
		}
	}
	args, err := normalizeArgs(schema, raw)
	if err != nil {
		return nil, err
	}
	if t.Effect != reads && len(args) > maxCallBytes {
		return nil, invalid("the arguments take %d bytes as JSON, and one call may carry at most %d (512 KiB); "+
			"split the work into smaller calls (fewer tasks or criteria per call, shorter content)", len(args), maxCallBytes)
	}
	call := &Call{Request: app.Request{Who: who}, Conn: conn}
	if req.Extra != nil {
		call.Header = req.Extra.Header
	}
	if t.Effect != reads {
		args, call.RequestID = takeRequestID(args)
	}
	var in In
	if err := json.Unmarshal(args, &in); err != nil {
		// normalizeArgs has checked every field against the schema, so this is a value the schema
		// allows but Go cannot hold; name the field without Go's vocabulary.
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) && ute.Field != "" {
			return nil, invalid("%s has a value out of range", ute.Field)
		}
		return nil, invalid("arguments could not be read")
	}
	if c, ok := any(&in).(canonicalizer); ok {
		c.canonicalize()
		args, _ = json.Marshal(in) // the requestId ledger compares canonical forms
	}
	timeout := d.CallTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()

	run := func() (json.RawMessage, error) {
		out, err := t.Run(ctx, d, call, in)
		if err != nil {
			return nil, err
		}
		if f, ok := any(&out).(fitter); ok {
			f.fit()
		}
		return encodeResult(out)
	}
	var body json.RawMessage
	// On a read-only connection the tools that may be called change nothing (ReadOnlyForm), so
	// there is no outcome to keep for a retry, and the requestId ledger is not written either.
	if call.RequestID != "" && !conn.ReadOnly {
		body, err = d.runOnce(ctx, t.Name, call, args, run)
	} else {
		body, err = run()
	}
	if err != nil {
		return nil, err
	}
	return toolResult[Out](body), nil
}

// takeRequestID takes the requestId out of a mutating call's normalized arguments and returns
// the rest, the form the requestId ledger hashes, with it ("" when the call has none).
func takeRequestID(args json.RawMessage) (json.RawMessage, string) {
	var envelope map[string]json.RawMessage
	_ = json.Unmarshal(args, &envelope)
	rid, ok := envelope[requestIDField]
	if !ok {
		return args, ""
	}
	var requestID string
	_ = json.Unmarshal(rid, &requestID)
	delete(envelope, requestIDField)
	// The requestId ledger hashes this form. json.Marshal (which HTML-escapes, unlike
	// plainJSON) keeps every call's hash what it has always been, so a requestId stays
	// bound to its call across versions; equivalent calls still encode alike.
	args, _ = json.Marshal(envelope)
	return args, requestID
}

// toolResult is the result a client gets for a tool's encoded output: a sentence as text
// content, or the structured result with its JSON (and note) as text.
func toolResult[Out any](body json.RawMessage) *mcpsdk.CallToolResult {
	if _, isText := any(*new(Out)).(textResult); isText {
		var s string
		_ = json.Unmarshal(body, &s)
		return &mcpsdk.CallToolResult{Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: s}}}
	}
	text := string(body)
	// A note is a field of the structured result, which is all some clients show the model; it
	// also follows the JSON in the text, where clients of docs/rules.md §8.11 read it. It is read
	// from the body, so a retry answered from the requestId ledger carries it too.
	var out Out
	if n, ok := any(&out).(noter); ok && json.Unmarshal(body, &out) == nil && n.Note() != "" {
		text += "\n" + n.Note()
	}
	return &mcpsdk.CallToolResult{StructuredContent: body, Content: []mcpsdk.Content{&mcpsdk.TextContent{Text: text}}}
}

// encodeResult is the JSON of a tool's result. An empty list is [], never null, at any depth
// (issue 19; TestResultsHaveNoNullArrays): a nil slice reaches the client as an empty one.
func encodeResult(out any) ([]byte, error) {
	v := reflect.New(reflect.TypeOf(out)).Elem()
	v.Set(reflect.ValueOf(out))
	emptyLists(v)
	return json.Marshal(v.Interface())
}

var rawJSON = reflect.TypeFor[json.RawMessage]()

// emptyLists replaces, in the settable value v and everything it holds, each nil slice with an
// empty one. It copies every pointee, slice and map on its way instead of changing them, since
// a result may share them with other data; raw JSON and byte slices are left as they are.
func emptyLists(v reflect.Value) {
	switch v.Kind() {
	case reflect.Pointer:
		if !v.IsNil() {
			c := reflect.New(v.Type().Elem())
			c.Elem().Set(v.Elem())
			emptyLists(c.Elem())
			v.Set(c)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			if f := v.Field(i); f.CanSet() {
				emptyLists(f)
			}
		}
	case reflect.Slice:
		if v.Type() == rawJSON || v.Type().Elem().Kind() == reflect.Uint8 {
			return
		}
		c := reflect.MakeSlice(v.Type(), v.Len(), v.Len())
		reflect.Copy(c, v)
		for i := range c.Len() {
			emptyLists(c.Index(i))
		}
		v.Set(c)
	case reflect.Array:
		for i := range v.Len() {
			emptyLists(v.Index(i))
		}
	case reflect.Map:
		if v.IsNil() {
			return
		}
		c := reflect.MakeMapWithSize(v.Type(), v.Len())
		for it := v.MapRange(); it.Next(); {
			e := reflect.New(v.Type().Elem()).Elem()
			e.Set(it.Value())
			emptyLists(e)
			c.SetMapIndex(it.Key(), e)
		}
		v.Set(c)
	case reflect.Interface:
		if !v.IsNil() {
			e := reflect.New(v.Elem().Type()).Elem()
			e.Set(v.Elem())
			emptyLists(e)
			v.Set(e)
		}
	}
}

// knownKeysOnly refuses an argument key the schema does not have (a Strict tool).
func knownKeysOnly(schema *jsonschema.Schema, raw json.RawMessage) error {
	var keys map[string]json.RawMessage
	if json.Unmarshal(raw, &keys) != nil {
		return nil // normalizeArgs says what is wrong with it
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if _, ok := schema.Properties[k]; !ok {
			return invalid("%s is not an argument of this tool, which accepts only %s; nothing was changed",
				k, strings.Join(propertyOrder(schema), ", "))
		}
	}
	return nil
}

// canonicalizer is an input with a canonical form beyond what its schema's normalization gives
// (labels that match in any case, duplicates that mean nothing); handlers and the requestId
// ledger see only the canonical form, so equivalent calls are the same call.
type canonicalizer interface{ canonicalize() }

// noter is a result with a note (docs/rules.md §8.11): a field of its structured content that the
// text repeats after the JSON.
type noter interface{ Note() string }

// runOnce applies docs/rules.md §8.5 for a call carrying a requestId (docs/write-path.md, "Exactly
// once"): a retry of a call that succeeded gets its result without running again; a requestId
// reused for another tool or other arguments is refused; a call that was refused moves the key
// to its next generation, so a retry after the state changed runs again (one refused as invalid
// input also unbinds the key, so the corrected call runs with it); and a call whose outcome
// is unknown (its deadline passed) keeps its generation, so its retry reaches the same update
// and gets its outcome. Everything run under one generation is idempotent for it.
func (d *Deps) runOnce(ctx context.Context, toolName string, call *Call, args json.RawMessage, run func() (json.RawMessage, error)) (json.RawMessage, error) {
	sum := sha256.Sum256(append([]byte(toolName+"\x00"), args...))
	hash := hex.EncodeToString(sum[:])
	agent := call.Who.Caller.AgentUUID
	prior, err := d.Store.BeginToolRequest(ctx, agent, call.RequestID, toolName, hash)
	switch {
	case errors.Is(err, store.ErrRequestMismatch):
		return nil, invalid("requestId %q was already used for a different call (%s); use a new requestId for new work",
			call.RequestID, prior.Tool)
	case err != nil:
		return nil, err
	case prior.State == "done" && string(prior.Result) == alreadyAppliedResult:
		return nil, workflows.ErrAlreadyApplied
	case prior.State == "done" && string(prior.Result) == store.RolledBackResult:
		return nil, workflows.ErrRolledBack
	case prior.State == "done":
		return prior.Result, nil
	}
	call.Generation, call.Retry = prior.Generation, prior.Existed
	body, err := run()
	// The ledger row must follow the outcome even when the call's deadline has passed.
	bg := context.WithoutCancel(ctx)
	switch {
	case err == nil:
		if ferr := d.Store.FinishToolRequest(bg, agent, call.RequestID, call.Generation, body); ferr != nil {
			d.Log.ErrorContext(ctx, "could not record requestId result", "requestId", call.RequestID, "err", ferr)
		}
	case workflows.IsKind(err, workflows.KindAlreadyApplied):
		if ferr := d.Store.FinishToolRequest(bg, agent, call.RequestID, call.Generation, json.RawMessage(alreadyAppliedResult)); ferr != nil {
			d.Log.ErrorContext(ctx, "could not record requestId result", "requestId", call.RequestID, "err", ferr)
		}
	case workflows.IsKind(err, workflows.KindRolledBack):
		if ferr := d.Store.FinishToolRequest(bg, agent, call.RequestID, call.Generation, json.RawMessage(store.RolledBackResult)); ferr != nil {
			d.Log.ErrorContext(ctx, "could not record requestId result", "requestId", call.RequestID, "err", ferr)
		}
	case refused(err):
		release := d.Store.RefuseToolRequest
		if _, kind := classify(err); kind == "invalid_input" {
			release = d.Store.ReleaseToolRequest // nothing ran: the corrected call may use the key
		}
		if ferr := release(bg, agent, call.RequestID, call.Generation); ferr != nil {
			d.Log.ErrorContext(ctx, "could not release requestId", "requestId", call.RequestID, "err", ferr)
		}
	}
	return body, err
}

// alreadyAppliedResult is the ledger's result of a call answered with workflows.ErrAlreadyApplied
// (no tool's result is JSON null).
const alreadyAppliedResult = "null"

// refused reports whether err is a refusal: a known outcome that changed nothing. An outage
// (deadline, unreachable database) is not one: it may have struck after the command was
// applied, so the requestId keeps its generation and a retry reaches the same update. Nor is a
// divergence found because the workflow ended with the command in flight (MayHaveApplied): its
// retry after the repair must reach the same update. A divergence the workflow itself answered
// (its write met a row elsewhere and wrote nothing) is a refusal: Temporal keeps that answer for
// the update's id in the run, so a retry after the repair would get it again, for ever, under
// the same generation.
func refused(err error) bool { return app.Refused(err) }
