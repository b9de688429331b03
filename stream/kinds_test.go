package stream_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/vocab"
)

// The event kinds are the notification actions: every action of docs/rules.md §7.2's table is a
// kind the stream accepts, and no kind is missing from that table.
func TestEventKindsAreTheNotificationActions(t *testing.T) {
	b, err := os.ReadFile("../docs/rules.md")
	require.NoError(t, err)
	doc := string(b)
	start := strings.Index(doc, `<a id="s7.2"></a>`)
	end := strings.Index(doc, `<a id="s7.3"></a>`)
	require.True(t, start > 0 && end > start)
	var actions []string
	cell := regexp.MustCompile("`([a-z_]+)`")
	for _, line := range strings.Split(doc[start:end], "\n") {
		cols := strings.Split(line, "|")
		if len(cols) < 4 || strings.Contains(line, "---") {
			continue
		}
		for _, m := range cell.FindAllStringSubmatch(cols[2], -1) {
			if !slices.Contains(actions, m[1]) {
				actions = append(actions, m[1])
			}
		}
	}
	require.ElementsMatch(t, vocab.EventKinds, actions)
}
