package store

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestParseMentions(t *testing.T) {
	a := "0b7c4d1e-2f3a-4b5c-8d6e-7f8091a2b3c4"
	u := "1c8d5e2f-3a4b-4c6d-9e7f-8091a2b3c4d5"
	for _, tc := range []struct {
		name, text string
		want       []MentionRef
	}{
		{"agent and user", "hi @[Dev Bot](agent:" + a + ") and @[Ann](user:" + u + ")",
			[]MentionRef{{"agent", a, "Dev Bot"}, {"user", u, "Ann"}}},
		{"upper-case uuid, deduplicated", "@[X](agent:" + strings.ToUpper(a) + ") @[Y](agent:" + a + ")",
			[]MentionRef{{"agent", a, "X"}}},
		{"the same uuid as a user and an agent are two people", "@[X](agent:" + a + ") @[Y](user:" + a + ")",
			[]MentionRef{{"agent", a, "X"}, {"user", a, "Y"}}},
		{"a suffix inside the parentheses", "@[X](agent:" + a + "?cwd=/src&host=box)", []MentionRef{{"agent", a, "X"}}},
		{"malformed", "@[X](agent:1234) @[X](robot:" + a + ") @X(agent:" + a + ") @[](agent:" + a + ") [X](agent:" + a + ") " +
			"@[X] (agent:" + a + ") @[X](agent:" + a + "0) @[a\nb](agent:" + a + ")", nil},
		{"empty", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, ParseMentions(tc.text))
		})
	}
	var many []string
	for i := 0; i < 12; i++ {
		many = append(many, "@[N](agent:"+testUUID(i)+")")
	}
	require.Len(t, ParseMentions(strings.Join(many, " ")), MaxMentionsPerText)
}

// testUUID is a distinct uuid per i.
func testUUID(i int) string { return derivedID("test", string(rune('a'+i))) }

func TestMentionSnippet(t *testing.T) {
	a := "0b7c4d1e-2f3a-4b5c-8d6e-7f8091a2b3c4"
	require.Equal(t, "ping @Dev Bot, see this", mentionSnippet("ping  @[Dev Bot](agent:"+a+"),\n see\u00a0this"))
	long := mentionSnippet(strings.Repeat("é", 150))
	require.Equal(t, 100, len([]rune(long)))
	require.True(t, strings.HasSuffix(long, "..."))
}
