package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	mcpsdk "github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/chorus-dev/chorus/mcp"
	"github.com/chorus-dev/chorus/mcpclient"
)

func newMCPCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Talk to a Chorus MCP endpoint from a shell (CHORUS_URL, CHORUS_API_KEY)",
		Long: `An MCP client for shells and scripts.

CHORUS_URL is the endpoint (default http://127.0.0.1:8637/api/mcp). CHORUS_API_KEY is the key to
use (default: the admin key chorus dev saved in <data-dir>/admin.key).

It selects every toolset (--toolsets all), so it reaches every tool the key permits; an agent's
own client gets its preset's toolsets unless it selects some (docs/rules.md §3.3). --read-only
lists and calls only the tools that change nothing.`,
	}
	cmd.PersistentFlags().StringVar(&g.mcpToolsets, "toolsets", "all",
		"toolsets to select, comma-separated (core, ideas, proposals, develop, sessions, review, collab, projects, all); empty: the key's preset default")
	cmd.PersistentFlags().BoolVar(&g.mcpReadOnly, "read-only", false, "connect in read-only mode")
	cmd.AddCommand(newMCPToolsCmd(g), newMCPCallCmd(g))
	return cmd
}

func newMCPToolsCmd(g *globals) *cobra.Command {
	var asJSON bool
	tools := &cobra.Command{
		Use:   "tools",
		Short: "List the tools your key may call",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			s, err := connectMCP(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer s.Close()
			var all []*mcpsdk.Tool
			for t, err := range s.Tools(cmd.Context(), nil) {
				if err != nil {
					return err
				}
				all = append(all, t)
			}
			if asJSON {
				return writeJSON(cmd.OutOrStdout(), all)
			}
			tw := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			for _, t := range all {
				desc, _, _ := strings.Cut(t.Description, ". ")
				fmt.Fprintf(tw, "%s\t%s\n", t.Name, desc)
			}
			return tw.Flush()
		},
	}
	tools.Flags().BoolVar(&asJSON, "json", false, "print the full tool list (schemas included) as JSON")
	return tools
}

func newMCPCallCmd(g *globals) *cobra.Command {
	var field string
	call := &cobra.Command{
		Use:   "call TOOL [JSON_OBJECT | - | key=value ...]",
		Short: "Call a tool and print its result as JSON; exits 1 when the tool reports an error",
		Long: `Call a tool and print the result: the structured JSON when the tool returns one, else its
text. When the tool answers with isError, the message goes to standard error and the exit status
is 1. When --field names nothing in a result (a tool that answers with text, or a path its JSON
does not have), the call succeeded and its change is made: the whole result is printed, the
reason goes to standard error, and the exit status is 3.

Arguments are a JSON object, "-" to read one from standard input, or key=value pairs (a value
that parses as JSON, like 2, true or ["a"], is used as such; anything else is a string).
--field prints one value of the result, by a dotted path (array items by index), for scripts.

  chorus mcp call chorus_checkin
  chorus mcp call chorus_admin_create_project '{"name":"Apollo"}'
  P=$(chorus mcp call chorus_admin_create_project name=Apollo --field uuid)
  chorus mcp call chorus_get_project projectUuid=$P --field _count.ideas`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			arguments, err := callArguments(cmd.InOrStdin(), args[1:])
			if err != nil {
				return err
			}
			s, err := connectMCP(cmd.Context(), g)
			if err != nil {
				return err
			}
			defer s.Close()
			res, err := s.CallTool(cmd.Context(), &mcpsdk.CallToolParams{Name: args[0], Arguments: arguments})
			if err != nil {
				return err
			}
			text := mcpclient.ResultText(res)
			if res.IsError {
				fmt.Fprintln(cmd.ErrOrStderr(), text)
				return exitError{code: 1}
			}
			if field != "" {
				v, err := mcpclient.Field(res.StructuredContent, field)
				if res.StructuredContent == nil {
					err = fmt.Errorf("%s answered with text, not JSON, so --field %s does not apply", args[0], field)
				}
				if err != nil {
					printResult(cmd.OutOrStdout(), text)
					fmt.Fprintf(cmd.ErrOrStderr(), "chorus mcp call: %v; the call succeeded and its whole result is above\n", err)
					return exitError{code: 3}
				}
				if str, ok := v.(string); ok {
					fmt.Fprintln(cmd.OutOrStdout(), str)
					return nil
				}
				return writeJSON(cmd.OutOrStdout(), v)
			}
			printResult(cmd.OutOrStdout(), text)
			return nil
		},
	}
	call.Flags().StringVar(&field, "field", "", "print only this value of the result (dotted path, e.g. uuid or materializedTasks.0.taskUuid)")
	return call
}

// printResult prints a tool's text result; the text carries the JSON in the server's field
// order, indented here when it is JSON.
func printResult(w io.Writer, text string) {
	var pretty bytes.Buffer
	if json.Valid([]byte(text)) && json.Indent(&pretty, []byte(text), "", "  ") == nil {
		fmt.Fprintln(w, pretty.String())
		return
	}
	fmt.Fprintln(w, text)
}

// callArguments reads a tool call's arguments: nothing ({}), one JSON object, "-" (a JSON object
// on in), or key=value pairs.
func callArguments(in io.Reader, args []string) (map[string]any, error) {
	out := map[string]any{}
	switch {
	case len(args) == 0:
		return out, nil
	case len(args) == 1 && args[0] == "-":
		b, err := io.ReadAll(in)
		if err != nil {
			return nil, err
		}
		args = []string{string(b)}
		fallthrough
	case len(args) == 1 && strings.HasPrefix(strings.TrimSpace(args[0]), "{"):
		if err := json.Unmarshal([]byte(args[0]), &out); err != nil {
			return nil, fmt.Errorf("arguments are not a JSON object: %w", err)
		}
		return out, nil
	}
	for _, a := range args {
		k, v, ok := strings.Cut(a, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("argument %q is not key=value (or pass one JSON object)", a)
		}
		var parsed any
		if err := json.Unmarshal([]byte(v), &parsed); err == nil {
			out[k] = parsed
		} else {
			out[k] = v
		}
	}
	return out, nil
}

// connectMCP opens a client session to CHORUS_URL with CHORUS_API_KEY (or the saved admin key).
func connectMCP(ctx context.Context, g *globals) (*mcpsdk.ClientSession, error) {
	url := envOr("CHORUS_URL", "http://127.0.0.1:8637/api/mcp")
	key := strings.TrimSpace(os.Getenv("CHORUS_API_KEY"))
	if key == "" {
		path := filepath.Join(g.dataDir, "admin.key")
		b, err := os.ReadFile(path)
		if err != nil {
			return nil, fmt.Errorf("no API key: set CHORUS_API_KEY, or run chorus dev once so it saves %s", path)
		}
		key = strings.TrimSpace(string(b))
	}
	header := http.Header{}
	if g.mcpToolsets != "" {
		header.Set(mcp.ToolsetsHeader, g.mcpToolsets)
	}
	if g.mcpReadOnly {
		header.Set(mcp.ReadonlyHeader, "true")
	}
	httpc := &http.Client{Timeout: 2 * time.Minute, Transport: &mcpclient.Transport{Key: key, Header: header, Base: http.DefaultTransport}}
	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "chorus-cli", Version: version}, nil)
	s, err := c.Connect(ctx, &mcpsdk.StreamableClientTransport{Endpoint: url, HTTPClient: httpc, MaxRetries: -1}, nil)
	if err != nil {
		var he *mcpclient.HTTPError
		if errors.As(err, &he) {
			return nil, fmt.Errorf("%s refused the connection: %s", url, he.Body)
		}
		return nil, fmt.Errorf("cannot reach Chorus at %s (is chorus dev running? set CHORUS_URL otherwise): %w", url, err)
	}
	return s, nil
}
