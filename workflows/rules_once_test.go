package workflows

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A rule is stated once (issue 21, item 2): each refusal text of the rules below is written in
// one function (or constant) of the whole module's production code, and the front ends call
// that function instead of restating it. This test reads the source (no Temporal, no database).

// producedBy maps a fragment of a refusal text to the one place ("file:function") whose string
// literals may hold it.
var producedBy = map[string][]string{
	// The criteria rule (docs/rules.md §5.2), for task drafts, chorus_update_task and
	// chorus_create_tasks.
	"Acceptance criteria are required": {"workflows/rules.go:criteriaRequired"},
	// The blank-title rule, for ideas, proposals, drafts, tasks, documents and references.
	"%s must not be blank": {"workflows/rules.go:CheckTitle"},
	// Only the inline references' per-item error, which is a line of referenceErrors and not a
	// refusal (the entity is created), says "title must not be blank" in its own words.
	"title must not be blank": {"app/references.go:inlineReferenceProblem"},
	// chorus_create_tasks' rule on its draftUuid labels.
	"is used by two tasks": {"workflows/task_batch.go:ValidateTaskBatch"},
	// The dependency gate of a move to in_progress (docs/rules.md §5.3).
	"Cannot move to in_progress": {"workflows/task_rules.go:BlockedError"},
	// "Resolved" in SQL is store.resolvedSQL, derived from vocab.ResolvedTaskStatuses; the one
	// literal list left is "unfinished" (my assignments), not the dependency rule.
	"NOT IN ('done', 'closed')": {"store/assignments.go:Store.trackTasks"},
}

// callers lists functions that must call the shared rule rather than restate it.
var callers = []struct{ place, callee string }{
	{"app/tasks_edit.go:App.CreateTasks", "workflows.ValidateTaskBatch"},
	{"workflows/task_batch.go:CreateTasksWorkflow", "ValidateTaskBatch"},
	{"app/tasks_edit.go:App.UpdateTask", "workflows.CheckTitle"},
	{"workflows/task_rules.go:TaskState.checkUpdate", "CheckTitle"},
	{"workflows/task_rules.go:TaskState.checkUpdate", "CheckCriteria"},
	{"workflows/proposal_rules.go:ProposalState.checkAddTaskDraft", "CheckCriteria"},
	{"workflows/proposal_rules.go:ProposalState.checkUpdateTaskDraft", "CheckCriteria"},
}

func TestEachRefusalIsWrittenOnce(t *testing.T) {
	found := map[string][]string{}
	calls := map[string][]string{}
	eachProductionDecl(t, func(place string, decl ast.Decl) {
		ast.Inspect(decl, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.BasicLit:
				if n.Kind != token.STRING {
					return true
				}
				s, err := strconv.Unquote(n.Value)
				if err != nil {
					return true
				}
				for fragment := range producedBy {
					if strings.Contains(s, fragment) && !slices.Contains(found[fragment], place) {
						found[fragment] = append(found[fragment], place)
					}
				}
			case *ast.CallExpr:
				calls[place] = append(calls[place], exprName(n.Fun))
			}
			return true
		})
	})
	for fragment, want := range producedBy {
		assert.ElementsMatch(t, want, found[fragment], "the places that write %q", fragment)
	}
	for _, c := range callers {
		assert.Contains(t, calls[c.place], c.callee, "%s must call %s", c.place, c.callee)
	}
}

// declName names a top-level declaration: a function ("Type.method" for a method) or the names
// of a const, var or type declaration.
func declName(decl ast.Decl) string {
	switch d := decl.(type) {
	case *ast.FuncDecl:
		if d.Recv != nil && len(d.Recv.List) == 1 {
			return exprName(d.Recv.List[0].Type) + "." + d.Name.Name
		}
		return d.Name.Name
	case *ast.GenDecl:
		var names []string
		for _, spec := range d.Specs {
			switch s := spec.(type) {
			case *ast.ValueSpec:
				for _, n := range s.Names {
					names = append(names, n.Name)
				}
			case *ast.TypeSpec:
				names = append(names, s.Name.Name)
			}
		}
		return strings.Join(names, ",")
	}
	return "?"
}

// exprName spells a called or receiver expression: "f", "pkg.F", "T" for *T.
func exprName(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprName(e.X) + "." + e.Sel.Name
	case *ast.StarExpr:
		return exprName(e.X)
	case *ast.IndexExpr:
		return exprName(e.X)
	}
	return "?"
}

// refusalMakers are the functions that word a refusal, with the index of their format argument.
var refusalMakers = map[string]int{
	"Refuse": 1, "app.Refuse": 1, "workflows.Refuse": 1, "refuse": 0, "refuseAs": 1, "invalid": 0,
}

// fmtVerb matches a fmt verb, so a format's own words can be told from its verbs.
var fmtVerb = regexp.MustCompile(`%[-+# 0-9.]*[a-zA-Z%]`)

// TestEveryRefusalTextHasOneHome reads every refusal the production code words (the format of
// each call of a refusal maker above) and finds each text in one function: a text written in two
// places is a rule stated twice (issue 21: "a test lists the refusal texts and finds each
// produced by one function"). It also lists them, so a refusal's home is easy to find.
func TestEveryRefusalTextHasOneHome(t *testing.T) {
	homes := map[string][]string{}
	eachProductionDecl(t, func(place string, decl ast.Decl) {
		ast.Inspect(decl, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			i, ok := refusalMakers[exprName(call.Fun)]
			if !ok || i >= len(call.Args) {
				return true
			}
			lit, ok := call.Args[i].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			text, err := strconv.Unquote(lit.Value)
			if err == nil && !slices.Contains(homes[text], place) {
				homes[text] = append(homes[text], place)
			}
			return true
		})
	})
	require.Greater(t, len(homes), 50, "the refusal makers were found (a rename would hide them all)")
	for text, places := range homes {
		if !strings.ContainsFunc(fmtVerb.ReplaceAllString(text, ""), unicode.IsLetter) {
			continue // a pure format ("%s", "%s%s") passes on a text worded elsewhere
		}
		assert.Len(t, places, 1, "refusal %q is written in %v: state it once and call that", text, places)
	}
}

// eachProductionDecl calls fn with every top-level declaration of the module's production code
// (tests, testdata, tools/, clients/ and node_modules left out), named "file:declaration".
func eachProductionDecl(t *testing.T, fn func(place string, decl ast.Decl)) {
	t.Helper()
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	fset := token.NewFileSet()
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "node_modules" ||
				name == "testdata" || name == "tools" || name == "clients") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		for _, decl := range f.Decls {
			fn(filepath.ToSlash(rel)+":"+declName(decl), decl)
		}
		return nil
	})
	require.NoError(t, err)
}
