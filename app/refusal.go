package app

import (
	"fmt"

	"github.com/chorus-dev/chorus/vocab"
)

// Refusal is a use case's answer that changed nothing: a sentence for the caller (what failed,
// why, what to do next; docs/rules.md §3.7) and its kind. Front ends show Msg as is.
type Refusal struct {
	Kind vocab.RefusalKind
	Msg  string
}

func (e *Refusal) Error() string { return e.Msg }

// Refuse returns a Refusal of the given kind.
func Refuse(kind vocab.RefusalKind, format string, args ...any) error {
	return &Refusal{Kind: kind, Msg: fmt.Sprintf(format, args...)}
}
