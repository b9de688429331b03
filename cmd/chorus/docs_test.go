package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"mvdan.cc/sh/v3/syntax"
)

// Every command the README and the guides show can be run as written, as far as that can be
// checked without a running stack: each `chorus ...` command (also `go run ./cmd/chorus`,
// `./bin/chorus` and the compose image's entrypoint) names subcommands of the cobra tree, with
// flags it has, values of the flags' types and the number of arguments it takes; each `chorus
// mcp call` names a served tool with input properties it has, every required one, and a
// `--field` path its result has; each `make` target is in the Makefile; each relative link
// reaches a file, and its #anchor a heading of that file. Shell helpers a block defines
// (`pm() { CHORUS_API_KEY=... ./bin/chorus mcp call "$@"; }`) are followed.
func TestDocsCommandsExist(t *testing.T) {
	docs := map[string]string{}
	files := []string{"README.md", "deploy/README-compose.md"}
	guides, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	require.NoError(t, err)
	for _, g := range guides {
		files = append(files, filepath.ToSlash(filepath.Join("docs", filepath.Base(g))))
	}
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join("..", "..", f))
		require.NoError(t, err)
		docs[f] = string(b)
	}
	c := newDocChecker(t)
	problems := c.check(docs)
	require.Empty(t, problems, "the docs show commands or links that do not work as written:\n%s", strings.Join(problems, "\n"))
	// The check sees what it is meant to: the README's walkthrough alone calls many tools.
	require.Greater(t, c.seen["mcp call"], 20, "the walkthrough's tool calls were not found")
	require.Greater(t, c.seen["make"], 3)
	require.Greater(t, c.seen["link"], 30)
}

// The checker finds each kind of broken command, so an empty list above means something.
func TestDocsCommandsCheckerFindsBrokenOnes(t *testing.T) {
	c := newDocChecker(t)
	doc := "See [the guide](docs/nosuch.md), [ops](docs/operations.md#no-such-heading) and [ok](docs/operations.md#the-temporal-ui).\n\n" +
		"Run `chorus ops chek` or `chorus agent create --nmae x`.\n\n" +
		"```sh\n" +
		"pm() { CHORUS_API_KEY=$PM_KEY ./bin/chorus mcp call \"$@\"; }\n" +
		"go run ./cmd/chorus key create --agent <agent-uuid> --expires-in soon\n" +
		"chorus serve --role api extra\n" +
		"make nosuchtarget ARGS=--ui\n" +
		"X=$(pm chorus_no_such_tool a=b --field uuid)\n" +
		"pm chorus_claim_idea ideaUuid=$I colour=red --field status\n" +
		"pm chorus_claim_idea ideaUuid=$I --field statuss\n" +
		"pm chorus_pm_create_idea title=x --field uuid\n" +
		"```\n\n" +
		"```console\n$ ./bin/chorus ops repair --everything\noutput chorus ops nothing\n```\n"
	problems := strings.Join(c.check(map[string]string{"README.md": doc}), "\n")
	for _, want := range []string{
		"docs/nosuch.md",                       // a link to a missing file
		"#no-such-heading",                     // an anchor that is no heading
		"chorus ops chek",                      // an unknown subcommand
		"--nmae",                               // an unknown flag
		"--expires-in",                         // a value of the wrong type
		"chorus serve --role api extra",        // an argument the command does not take
		"make target nosuchtarget",             // a target the Makefile lacks
		"chorus_no_such_tool",                  // a tool that is not served, through a helper
		"colour",                               // an input property the tool lacks
		"statuss",                              // a result path the tool lacks
		"chorus_pm_create_idea lacks required", // a required property left out
		"--everything",                         // a console block's command
	} {
		require.Contains(t, problems, want)
	}
	require.NotContains(t, problems, "the-temporal-ui")
	require.NotContains(t, problems, "chorus ops nothing", "a console block's output is not a command")
}

type docChecker struct {
	targets map[string]bool        // make targets
	tools   map[string]docToolInfo // served tools by name
	anchors map[string][]string    // a doc's anchors, by path from the repository root
	seen    map[string]int         // what the check saw, by kind
}

type docToolInfo struct {
	input  map[string]any
	output map[string]any
}

func newDocChecker(t *testing.T) *docChecker {
	c := &docChecker{targets: map[string]bool{}, tools: map[string]docToolInfo{}, anchors: map[string][]string{}, seen: map[string]int{}}
	mk, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	require.NoError(t, err)
	target := regexp.MustCompile(`(?m)^([A-Za-z0-9_./-]+):`)
	for _, m := range target.FindAllStringSubmatch(string(mk), -1) {
		c.targets[m[1]] = true
	}
	golden, err := os.ReadFile(filepath.Join("..", "..", "mcp", "testdata", "tools.golden.json"))
	require.NoError(t, err)
	var tools []struct {
		Name         string         `json:"name"`
		InputSchema  map[string]any `json:"inputSchema"`
		OutputSchema map[string]any `json:"outputSchema"`
	}
	require.NoError(t, json.Unmarshal(golden, &tools))
	for _, tl := range tools {
		c.tools[tl.Name] = docToolInfo{input: tl.InputSchema, output: tl.OutputSchema}
	}
	require.NotEmpty(t, c.tools)
	return c
}

// check returns one line per problem in docs (path from the repository root -> text).
func (c *docChecker) check(docs map[string]string) []string {
	var problems []string
	names := make([]string, 0, len(docs))
	for name := range docs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		prose, blocks, spans := splitMarkdown(docs[name])
		for _, l := range docLinks(prose) {
			c.seen["link"]++
			if p := c.checkLink(name, l); p != "" {
				problems = append(problems, name+": "+p)
			}
		}
		aliases := map[string][]string{}
		for _, b := range blocks {
			for _, p := range c.checkShell(b.code, aliases, false) {
				problems = append(problems, fmt.Sprintf("%s:%d: %s", name, b.line+p.line-1, p.text))
			}
		}
		for _, s := range spans {
			if !commandSpan.MatchString(s.code) {
				continue
			}
			for _, p := range c.checkShell(s.code, aliases, true) {
				problems = append(problems, fmt.Sprintf("%s:%d: %s", name, s.line, p.text))
			}
		}
	}
	return problems
}

// commandSpan is an inline code span that is a whole command (not `chorus_checkin` or a path).
var commandSpan = regexp.MustCompile(`^(chorus|\./bin/chorus|go run \./cmd/chorus|make) `)

type codeSnippet struct {
	code string
	line int
}

// splitMarkdown separates prose (fences and inline code removed) from the shell code in fenced
// blocks (sh, bash, shell; console blocks' "$ " lines) and the inline code spans of the prose.
func splitMarkdown(doc string) (prose string, blocks, spans []codeSnippet) {
	var b strings.Builder
	sc := bufio.NewScanner(strings.NewReader(doc))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	inFence, lang, start := false, "", 0
	var code strings.Builder
	span := regexp.MustCompile("`([^`]+)`")
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		if strings.HasPrefix(trimmed, "```") {
			if !inFence {
				inFence, lang, start = true, strings.TrimSpace(strings.TrimPrefix(trimmed, "```")), n+1
				code.Reset()
				continue
			}
			inFence = false
			if lang == "sh" || lang == "bash" || lang == "shell" || lang == "console" || lang == "" {
				blocks = append(blocks, codeSnippet{code: code.String(), line: start})
			}
			continue
		}
		if inFence {
			switch lang {
			case "console", "":
				if rest, ok := strings.CutPrefix(trimmed, "$ "); ok {
					code.WriteString(rest + "\n")
				} else {
					code.WriteString("\n")
				}
			default:
				code.WriteString(line + "\n")
			}
			continue
		}
		for _, m := range span.FindAllStringSubmatch(line, -1) {
			spans = append(spans, codeSnippet{code: m[1], line: n})
		}
		b.WriteString(span.ReplaceAllString(line, "") + "\n")
	}
	return b.String(), blocks, spans
}

func docLinks(prose string) []string {
	link := regexp.MustCompile(`\]\(([^)\s]+)\)`)
	var out []string
	for _, m := range link.FindAllStringSubmatch(prose, -1) {
		out = append(out, m[1])
	}
	return out
}

func (c *docChecker) checkLink(from, target string) string {
	if urlScheme.MatchString(target) { // a web address, mailto:, or a mention's user:<uuid>

		return ""
	}
	path, anchor, _ := strings.Cut(target, "#")
	file := from
	if path != "" {
		file = filepath.ToSlash(filepath.Clean(filepath.Join(filepath.Dir(from), path)))
		if _, err := os.Stat(filepath.Join("..", "..", file)); err != nil {
			return fmt.Sprintf("the link (%s) leads to %s, which does not exist", target, file)
		}
	}
	if anchor == "" || !strings.HasSuffix(file, ".md") {
		return ""
	}
	anchors, ok := c.anchors[file]
	if !ok {
		b, err := os.ReadFile(filepath.Join("..", "..", file))
		if err != nil {
			return fmt.Sprintf("the link (%s): %v", target, err)
		}
		anchors = markdownAnchors(string(b))
		c.anchors[file] = anchors
	}
	if !slices.Contains(anchors, anchor) {
		return fmt.Sprintf("the link (%s) names #%s, which is no heading or anchor of %s", target, anchor, file)
	}
	return ""
}

// markdownAnchors are the ids GitHub gives a document's headings (lower case, punctuation
// dropped, spaces as hyphens, repeats numbered) and its explicit <a id="..."> anchors.
func markdownAnchors(doc string) []string {
	var out []string
	count := map[string]int{}
	explicit := regexp.MustCompile(`<a id="([^"]+)"></a>`)
	inFence := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range explicit.FindAllStringSubmatch(line, -1) {
			out = append(out, m[1])
		}
		if !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		text = explicit.ReplaceAllString(text, "")
		var slug strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				slug.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9':
				slug.WriteRune(r)
			}
		}
		s := slug.String()
		if n := count[s]; n > 0 {
			out = append(out, s+"-"+strconv.Itoa(n))
		} else {
			out = append(out, s)
		}
		count[s]++
	}
	return out
}

var urlScheme = regexp.MustCompile(`^[a-z][a-z0-9+.-]*:`)

// placeholder is what the docs write for a value the reader fills in: <uuid>, <agent-uuid>.
var placeholder = regexp.MustCompile(`<[a-z][a-z0-9 ._-]*>`)

// checkShell parses code as bash and checks every command it runs that Chorus or make owns.
// In prose (mention), a command given without its arguments names the command: `chorus ops
// replay` is the command, not a call of it.
func (c *docChecker) checkShell(code string, aliases map[string][]string, mention bool) []shellProblem {
	code = placeholder.ReplaceAllString(code, "PLACEHOLDER")
	f, err := syntax.NewParser().Parse(strings.NewReader(code), "")
	if err != nil {
		return []shellProblem{{1, fmt.Sprintf("not valid shell (%v): %s", err, firstLine(code))}}
	}
	var problems []shellProblem
	syntax.Walk(f, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.FuncDecl:
			// name() { ... chorus mcp call "$@"; }: calls of name are calls of that command.
			if call, ok := n.Body.Cmd.(*syntax.Block); ok && len(call.Stmts) == 1 {
				if ce, ok := call.Stmts[0].Cmd.(*syntax.CallExpr); ok && len(ce.Args) > 1 {
					args := shellWords(ce.Args)
					if args[len(args)-1] == "$@" {
						aliases[n.Name.Value] = args[:len(args)-1]
					}
				}
			}
		case *syntax.CallExpr:
			if len(n.Args) == 0 {
				return true
			}
			args := shellWords(n.Args)
			if prefix, ok := aliases[args[0]]; ok {
				args = append(slices.Clone(prefix), args[1:]...)
			}
			if slices.Contains(args, "$@") {
				return true // a helper's body, checked where it is called
			}
			if p := c.checkCommand(args, mention); p != "" {
				problems = append(problems, shellProblem{int(n.Pos().Line()), p})
			}
		}
		return true
	})
	return problems
}

// shellProblem is a problem on a line of a shell snippet (1: its first).
type shellProblem struct {
	line int
	text string
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return l
}

// shellWords renders each word with its quotes removed; what only runs at run time (a
// variable, a command substitution) reads as X.
func shellWords(words []*syntax.Word) []string {
	out := make([]string, len(words))
	for i, w := range words {
		var b strings.Builder
		var part func(p syntax.WordPart)
		part = func(p syntax.WordPart) {
			switch p := p.(type) {
			case *syntax.Lit:
				b.WriteString(p.Value)
			case *syntax.SglQuoted:
				b.WriteString(p.Value)
			case *syntax.DblQuoted:
				if len(p.Parts) == 1 {
					if pe, ok := p.Parts[0].(*syntax.ParamExp); ok && pe.Param.Value == "@" {
						b.WriteString("$@")
						return
					}
				}
				for _, q := range p.Parts {
					part(q)
				}
			default:
				b.WriteString("X")
			}
		}
		for _, p := range w.Parts {
			part(p)
		}
		out[i] = b.String()
	}
	return out
}

// checkCommand checks one command line, given as its words; commands of other programs pass.
func (c *docChecker) checkCommand(args []string, mention bool) string {
	switch {
	case args[0] == "chorus" || args[0] == "./bin/chorus" || args[0] == "bin/chorus" || args[0] == "/usr/local/bin/chorus":
		return c.checkChorus(args[1:], mention)
	case len(args) > 2 && args[0] == "go" && args[1] == "run" && args[2] == "./cmd/chorus":
		return c.checkChorus(args[3:], mention)
	case len(args) > 4 && args[0] == "docker" && args[1] == "compose" && args[2] == "run":
		// The chorus image's entrypoint is chorus (Dockerfile).
		for i, a := range args {
			if strings.HasPrefix(a, "chorus-") && i > 2 {
				return c.checkChorus(args[i+1:], mention)
			}
		}
	case args[0] == "make":
		c.seen["make"]++
		for _, a := range args[1:] {
			if strings.Contains(a, "=") || strings.HasPrefix(a, "-") {
				continue
			}
			if !c.targets[a] {
				return fmt.Sprintf("make target %s is not in the Makefile: %s", a, strings.Join(args, " "))
			}
		}
	}
	return ""
}

// checkChorus resolves args in a fresh command tree as cobra would, without running anything.
func (c *docChecker) checkChorus(args []string, mention bool) string {
	line := "chorus " + strings.Join(args, " ")
	root := newRootCmd()
	cmd, rest, err := root.Find(args)
	if err != nil {
		return fmt.Sprintf("%v: %s", err, line)
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return fmt.Sprintf("%v: %s", err, line)
	}
	pos := cmd.Flags().Args()
	if cmd.HasSubCommands() && !cmd.Runnable() && len(pos) > 0 {
		return fmt.Sprintf("%q is not a subcommand of %q: %s", strings.Join(pos, " "), cmd.CommandPath(), line)
	}
	if mention && len(pos) == 0 {
		return ""
	}
	if err := cmd.ValidateArgs(pos); err != nil {
		return fmt.Sprintf("%v: %s", err, line)
	}
	if cmd.CommandPath() != "chorus mcp call" || len(pos) == 0 {
		return ""
	}
	c.seen["mcp call"]++
	tool, ok := c.tools[pos[0]]
	if !ok {
		return fmt.Sprintf("%s is not a tool Chorus serves (mcp/testdata/tools.golden.json): %s", pos[0], line)
	}
	props, _ := tool.input["properties"].(map[string]any)
	given := map[string]bool{}
	for _, a := range pos[1:] {
		k, _, ok := strings.Cut(a, "=")
		if !ok || strings.HasPrefix(a, "{") {
			return "" // a JSON object of arguments: not checked here
		}
		if _, ok := props[k]; !ok {
			return fmt.Sprintf("%s has no input property %s: %s", pos[0], k, line)
		}
		given[k] = true
	}
	if req, ok := tool.input["required"].([]any); ok {
		for _, r := range req {
			if !given[r.(string)] {
				return fmt.Sprintf("%s lacks required input property %s: %s", pos[0], r, line)
			}
		}
	}
	if field, _ := cmd.Flags().GetString("field"); field != "" {
		if !schemaHasPath(tool.output, strings.Split(field, ".")) {
			return fmt.Sprintf("%s's result has no field %s: %s", pos[0], field, line)
		}
	}
	return ""
}

// schemaHasPath reports whether a dotted --field path (array items by index) can name a value
// of a result with this JSON schema.
func schemaHasPath(schema map[string]any, path []string) bool {
	if len(path) == 0 {
		return true
	}
	if alts, ok := schema["anyOf"].([]any); ok {
		for _, alt := range alts {
			if m, ok := alt.(map[string]any); ok && schemaHasPath(m, path) {
				return true
			}
		}
		return false
	}
	if _, err := strconv.Atoi(path[0]); err == nil {
		items, ok := schema["items"].(map[string]any)
		return ok && schemaHasPath(items, path[1:])
	}
	if props, ok := schema["properties"].(map[string]any); ok {
		if p, ok := props[path[0]].(map[string]any); ok {
			return schemaHasPath(p, path[1:])
		}
	}
	if extra, ok := schema["additionalProperties"].(map[string]any); ok {
		return schemaHasPath(extra, path[1:])
	}
	return false
}
