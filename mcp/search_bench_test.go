package mcp

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/store/storetest"
)

// The cost of a crafted search (issue 18): 32 words that every document holds, but only at the
// end of a long text, so that finding each word's first place means reading the whole text.
// Results are in docs/performance.md ("Search"). Run them with
//
//	go test ./mcp -run '^$' -bench 'Snippet|CraftedSearch' -benchmem

const (
	craftedDocs      = 60      // more than the 50 results a search returns
	craftedBodyBytes = 400_000 // within the 512 KiB a call may carry
)

// craftedWords are the 32 words of the query, hidden at the end of every body.
var craftedWords = func() []string {
	w := make([]string, 32)
	for i := range w {
		w[i] = fmt.Sprintf("zq%02d", i)
	}
	return w
}()

// craftedBody is craftedBodyBytes of words no term starts, then the 32 words.
func craftedBody(i int) string {
	var b strings.Builder
	for b.Len() < craftedBodyBytes {
		fmt.Fprintf(&b, "filler%d text%d ", i, b.Len()%97)
	}
	b.WriteString(strings.Join(craftedWords, " "))
	return b.String()
}

// BenchmarkSnippet is the snippet code alone: 50 results of a crafted search.
func BenchmarkSnippet(b *testing.B) {
	bodies := make([]string, 50)
	for i := range bodies {
		bodies[i] = craftedBody(i)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		for i := range bodies {
			_ = snippet("Doc", &bodies[i], craftedWords)
		}
	}
}

// BenchmarkCraftedSearch is one whole chorus_search call (store query, snippets, JSON) with
// the crafted query over craftedDocs documents, on SQLite and PostgreSQL.
func BenchmarkCraftedSearch(b *testing.B) {
	for _, dialect := range storetest.Dialects {
		b.Run(dialect, func(b *testing.B) {
			ctx := context.Background()
			st := storetest.Open(b, dialect)
			boot, err := st.EnsureBootstrap(ctx, store.Bootstrap{CompanyName: "Acme", OwnerName: "Owner",
				OwnerEmail: "owner@example.com", AgentName: "Admin Agent"})
			if err != nil {
				b.Fatal(err)
			}
			caller := store.Caller{CompanyUUID: boot.Company.UUID, AgentUUID: boot.Agent.UUID, AgentName: boot.Agent.Name,
				OwnerUUID: boot.Owner.UUID}
			p, err := st.CreateProject(ctx, caller, store.NewProject{Name: "Bench"})
			if err != nil {
				b.Fatal(err)
			}
			for i := range craftedDocs {
				body := craftedBody(i)
				now := store.Now()
				if err := st.CreateDocument(ctx, &store.Document{UUID: store.NewUUID(), CompanyUUID: caller.CompanyUUID,
					ProjectUUID: p.UUID, Type: "prd", Title: fmt.Sprintf("Doc %d", i), Content: &body, Version: 1,
					CreatedByType: "agent", CreatedByUUID: caller.AgentUUID, CreatedAt: now, UpdatedAt: now}); err != nil {
					b.Fatal(err)
				}
			}
			rb := &readBench{key: boot.Key, tools: map[string]*builtTool{}}
			rb.deps = &Deps{Store: st, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			ep, err := NewEndpoint(rb.deps, "bench")
			if err != nil {
				b.Fatal(err)
			}
			for _, t := range ep.tools {
				rb.tools[t.spec.Name] = t
			}
			query := strings.Join(craftedWords, " ")
			res := rb.call(b, "chorus_search", map[string]any{"query": query})
			if n := len(decode[SearchOut](b, res).Results); n != 50 {
				b.Fatalf("the crafted query should find 50 documents, found %d", n)
			}
			b.ReportAllocs()
			measure(b, func(int) { rb.call(b, "chorus_search", map[string]any{"query": query}) })
		})
	}
}
