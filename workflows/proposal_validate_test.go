package workflows

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
)

func ids(v Validation) []string {
	var out []string
	for _, i := range v.Issues {
		out = append(out, i.ID)
	}
	return out
}

func TestValidateEmptyProposal(t *testing.T) {
	v := ValidateProposal(store.Proposal{InputType: "idea"}, nil)
	require.False(t, v.Valid)
	require.Equal(t, []string{"E1", "E3", "E4", "W1", "W5"}, ids(v))
	require.Equal(t, "Proposal validation failed:\n[error] Proposal must contain at least one PRD document draft\n"+
		"[error] Proposal must contain at least one task draft\n"+
		"[error] Proposal must have at least one input (idea or other source)\n"+
		"[warning] Proposal should contain at least one tech design document draft\n"+
		"[warning] Proposal description should not be empty", FailedValidationMessage(v))
}

func TestValidateCompleteProposal(t *testing.T) {
	long := strings.Repeat("x", minDocumentContent)
	desc := "d"
	p := store.Proposal{InputType: "idea", InputUUIDs: []string{"i1"}, Description: &desc,
		DocumentDrafts: []store.DocumentDraft{{Type: "prd", Title: "PRD", Content: long}, {Type: "tech_design", Title: "TD", Content: long}},
		TaskDrafts: []store.TaskDraft{
			{UUID: "a", Title: "A", Description: &desc, Priority: ptr("high"), StoryPoints: ptr(0.0), Kind: ptr("implementation"),
				AcceptanceCriteriaItems: []store.CriterionDraft{{Description: "ok", Required: true}}},
			{UUID: "b", Title: "B", Description: &desc, Priority: ptr("low"), StoryPoints: ptr(1.0), Kind: ptr("docs"),
				AcceptanceCriteriaItems: []store.CriterionDraft{{Description: "ok"}}, DependsOnDraftUUIDs: []string{"a"}},
		}}
	v := ValidateProposal(p, []store.IdeaFacts{{UUID: "i1", Title: "I", Found: true, ElaborationStatus: ptr("resolved")}})
	require.True(t, v.Valid)
	require.Empty(t, v.Issues, "0 story points counts as set (docs/rules.md §5.4, I2)")
}

func TestValidateFindsEachProblem(t *testing.T) {
	short := "too short"
	p := store.Proposal{InputType: "idea", InputUUIDs: []string{"i1", "i2"},
		DocumentDrafts: []store.DocumentDraft{{Type: "prd", Title: "PRD", Content: short}},
		TaskDrafts: []store.TaskDraft{
			{UUID: "a", Title: "A", Kind: ptr("docs"), DependsOnDraftUUIDs: []string{"a", "b", "ghost"}},
			{UUID: "b", Title: "B", DependsOnDraftUUIDs: []string{"c"}},
			{UUID: "c", Title: "C", DependsOnDraftUUIDs: []string{"a"}},
		}}
	v := ValidateProposal(p, []store.IdeaFacts{
		{UUID: "i1", Title: "Pending", Found: true, ElaborationStatus: ptr("validating")},
		{UUID: "i2", Title: "Never", Found: true},
	})
	require.False(t, v.Valid)
	require.Equal(t, []string{"E2", "E5", "E5", "E-DEP-UNKNOWN", "E-DEP-SELF", "E-DEP-CYCLE", "W1", "W2", "W2", "W2",
		"W3", "W3", "W3", "W5", "W-IMPL", "I1", "I1", "I1", "I2", "I2", "I2"}, ids(v))
	msgs := map[string]string{}
	for _, i := range v.Issues {
		msgs[i.ID] = i.Message
	}
	require.Equal(t, `Input idea "Never" has unresolved elaboration (status: null)`, msgs["E5"])
	require.Equal(t, `Task draft "A" depends on unknown draft "ghost"`, msgs["E-DEP-UNKNOWN"])
	require.Equal(t, `Task drafts form a dependency cycle: "A" -> "B" -> "C" -> "A"`, msgs["E-DEP-CYCLE"])
}

func TestNormalizeCriteria(t *testing.T) {
	got := NormalizeCriteria([]store.CriterionDraft{{Description: "  a  ", Required: true}, {Description: "   "}, {Description: "b"}})
	require.Equal(t, []store.CriterionDraft{{Description: "a", Required: true}, {Description: "b"}}, got)
}
