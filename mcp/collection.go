package mcp

import (
	"encoding/json"
	"sort"
)

// Collection tools share paging input and an envelope (docs/rules.md §3.6):
// {"<key>": [rows], "returned", "page", "pageSize", "total", ...}.

// PageIn is the paging input of collection tools.
type PageIn struct {
	Page     int `json:"page,omitempty" chorus:"min=1;max=1000000"`
	PageSize int `json:"pageSize,omitempty" chorus:"min=1;max=100"`
}

// window returns the page, page size and row offset, applying the default page size def.
func (p PageIn) window(def int) (page, size, offset int) {
	page, size = p.Page, p.PageSize
	if page < 1 {
		page = 1
	}
	if size < 1 {
		size = def
	}
	return page, size, (page - 1) * size
}

// Meta is the envelope of a collection result. Returned counts the rows actually sent, which
// can be fewer than a page when the text limit drops trailing rows; Total is the full count.
type Meta struct {
	Returned int `json:"returned"`
	Page     int `json:"page"`
	PageSize int `json:"pageSize"`
	Total    int `json:"total"`
}

// maxResultBytes bounds the JSON text of a collection result (docs/rules.md §3.6).
const maxResultBytes = 65536

// fit returns the longest prefix of rows whose result, as built by wrap, encodes to at most
// maxResultBytes of JSON.
func fit[T any](rows []T, wrap func([]T) any) []T {
	size := func(n int) int {
		b, err := json.Marshal(wrap(rows[:n]))
		if err != nil {
			return maxResultBytes + 1
		}
		return len(b)
	}
	if size(len(rows)) <= maxResultBytes {
		return rows
	}
	n := sort.Search(len(rows)+1, func(n int) bool { return size(n) > maxResultBytes }) - 1
	return rows[:max(n, 0)]
}

// budgetList is one list of an entity read that fitLists may cut: its length, and how to keep
// its first n rows.
type budgetList struct {
	n    int
	keep func(n int)
}

// fitLists cuts the lists of an entity read so that v encodes to at most maxResultBytes of JSON,
// the budget collections keep (docs/rules.md §3.6): in the order given, each list keeps the
// longest prefix that fits with those before it, so the last lists give way first. The entity's
// own fields are never cut: when they alone are over the budget, every list is emptied. The
// counts the entity shows beside its lists stay the full ones.
func fitLists(v any, lists ...budgetList) {
	size := func() int {
		b, err := json.Marshal(v)
		if err != nil {
			return maxResultBytes + 1
		}
		return len(b)
	}
	if size() <= maxResultBytes {
		return
	}
	for _, l := range lists {
		l.keep(0)
	}
	for _, l := range lists {
		k := sort.Search(l.n+1, func(k int) bool { l.keep(k); return size() > maxResultBytes }) - 1
		l.keep(max(k, 0))
	}
}

// fitter is a result with lists, cut to the byte budget by fitLists once its handler has built
// it whole (tool.call does it for every tool).
type fitter interface{ fit() }

// maxTitleRunes is the longest title or name a collection row shows whole (docs/rules.md §3.6).
const maxTitleRunes = 256

// clip shortens a title longer than 256 code points to 253 of them and "...".
func clip(s string) string {
	r := []rune(s)
	if len(r) <= maxTitleRunes {
		return s
	}
	return string(r[:maxTitleRunes-3]) + "..."
}
