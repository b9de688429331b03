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
)

func newMCPCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Talk to a Chorus MCP endpoint from a shell (CHORUS_URL, CHORUS_API_KEY)",
		Long: `An MCP client for shells and scripts.

CHORUS_URL is the endpoint (default http://127.0.0.1:8637/api/mcp). CHORUS_API_KEY is the key to
use (default: the admin key chorus dev saved in <data-dir>/admin.key).`,
	}
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

	call := &cobra.Command{
		Use:   "call TOOL [JSON_ARGS|-]",
		Short: "Call a tool and print its result as JSON; exits 1 when the tool reports an error",
		Long: `Call a tool with JSON arguments (default {}; "-" reads them from standard input) and print the
result: the structured JSON when the tool returns one, else its text. When the tool answers with
isError, the message goes to standard error and the exit status is 1.

  chorus mcp call chorus_checkin
  chorus mcp call chorus_admin_create_project '{"name":"Apollo"}'`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			raw := "{}"
			if len(args) == 2 {
				raw = args[1]
				if raw == "-" {
					b, err := io.ReadAll(cmd.InOrStdin())
					if err != nil {
						return err
					}
					raw = string(b)
				}
			}
			var arguments map[string]any
			if err := json.Unmarshal([]byte(raw), &arguments); err != nil {
				return fmt.Errorf("arguments must be a JSON object, like '{\"name\":\"x\"}': %w", err)
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
			text := resultText(res)
			if res.IsError {
				fmt.Fprintln(cmd.ErrOrStderr(), text)
				return exitError{code: 1}
			}
			// The text content carries the JSON in the server's field order; indent it when it is JSON.
			var pretty bytes.Buffer
			if json.Valid([]byte(text)) && json.Indent(&pretty, []byte(text), "", "  ") == nil {
				fmt.Fprintln(cmd.OutOrStdout(), pretty.String())
				return nil
			}
			if res.StructuredContent != nil && !strings.HasPrefix(strings.TrimSpace(text), "{") {
				return writeJSON(cmd.OutOrStdout(), res.StructuredContent)
			}
			fmt.Fprintln(cmd.OutOrStdout(), text)
			return nil
		},
	}
	cmd.AddCommand(tools, call)
	return cmd
}

func resultText(res *mcpsdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcpsdk.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
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
	httpc := &http.Client{Timeout: 2 * time.Minute, Transport: &authTransport{key: key, base: http.DefaultTransport}}
	c := mcpsdk.NewClient(&mcpsdk.Implementation{Name: "chorus-cli", Version: version}, nil)
	s, err := c.Connect(ctx, &mcpsdk.StreamableClientTransport{Endpoint: url, HTTPClient: httpc, MaxRetries: -1}, nil)
	if err != nil {
		var he *httpError
		if errors.As(err, &he) {
			return nil, fmt.Errorf("%s refused the key: %s", url, he.body)
		}
		return nil, fmt.Errorf("cannot reach Chorus at %s (is chorus dev running? set CHORUS_URL otherwise): %w", url, err)
	}
	return s, nil
}

// authTransport adds the bearer key and turns a 401 into a readable error.
type authTransport struct {
	key  string
	base http.RoundTripper
}

type httpError struct{ body string }

func (e *httpError) Error() string { return e.body }

func (t *authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+t.key)
	resp, err := t.base.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		return nil, &httpError{body: strings.TrimSpace(string(bytes.TrimSpace(b)))}
	}
	return resp, err
}
