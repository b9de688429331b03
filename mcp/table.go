package mcp

// toolTable is every tool Chorus serves, in the order tools/list shows them. A tool is one
// entry; everything a tool needs beyond its handler (permission gate, argument coercion,
// requestId ledger, deadline, logging, error mapping, annotations) is done once in tool.go.
func toolTable() []entry {
	return []entry{
		checkin,
		listProjects,
		getProject,
		adminCreateProject,

		getIdeas,
		getIdea,
		getAvailableIdeas,
		getElaboration,
		pmCreateIdea,
		claimIdea,
		releaseIdea,
		editIdea,
		pmStartElaboration,
		answerElaboration,
		pmValidateElaboration,
		pmSkipElaboration,
		adminDeleteIdea,

		getProposals,
		getProposal,
		pmCreateProposal,
		pmAddDocumentDraft,
		pmAddTaskDraft,
		pmUpdateDocumentDraft,
		pmUpdateTaskDraft,
		pmRemoveDocumentDraft,
		pmRemoveTaskDraft,
		pmValidateProposal,
		pmSubmitProposal,
		pmRejectProposal,
		adminApproveProposal,
		adminCloseProposal,
		pmRevokeProposal,

		getDocuments,
		getDocument,
		pmCreateDocument,
		pmUpdateDocument,
		adminDeleteDocument,
		createReport,
	}
}
