package mcp

import "slices"

// toolTable is every tool Chorus serves, in the order tools/list shows them. A tool is one
// entry; everything a tool needs beyond its handler (permission gate, argument coercion,
// requestId ledger, deadline, logging, error mapping, annotations) is done once in tool.go.
// The table is one list per area, joined in this order.
func toolTable() []entry {
	return slices.Concat(projectTools(), ideaTools(), proposalTools(), documentTools(), taskTools(),
		sessionTools(), collabTools())
}

// projectTools are the check-in and the tools of projects, project groups and their members.
func projectTools() []entry {
	return []entry{
		checkin,
		listProjects,
		getProject,
		adminCreateProject,
		getProjectGroups,
		getProjectGroup,
		getGroupDashboard,
		adminCreateProjectGroup,
		adminUpdateProjectGroup,
		adminDeleteProjectGroup,
		adminMoveProjectToGroup,
		listProjectMembers,
		adminAddProjectMember,
		adminRemoveProjectMember,
		listProjectGroupMembers,
		adminAddProjectGroupMember,
		adminRemoveProjectGroupMember,
	}
}

// ideaTools are the tools of ideas and their elaboration.
func ideaTools() []entry {
	return []entry{
		getIdeas,
		getIdea,
		getAvailableIdeas,
		getElaboration,
		pmCreateIdea,
		claimIdea,
		releaseIdea,
		pmAssignIdea,
		editIdea,
		pmStartElaboration,
		answerElaboration,
		pmValidateElaboration,
		pmSkipElaboration,
		adminDeleteIdea,
		moveIdea,
	}
}

// proposalTools are the tools of proposals and their drafts.
func proposalTools() []entry {
	return []entry{
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
	}
}

// documentTools are the tools of documents, reports and references.
func documentTools() []entry {
	return []entry{
		getDocuments,
		getDocument,
		pmCreateDocument,
		pmUpdateDocument,
		adminDeleteDocument,
		createReport,
		getReferences,
		addReference,
		updateReference,
		removeReference,
	}
}

// taskTools are the tools of tasks, search and the work on tasks.
func taskTools() []entry {
	return []entry{
		listTasks,
		getTask,
		getTaskDependencies,
		getAvailableTasks,
		getUnblockedTasks,
		getMyAssignments,
		search,
		searchMentionables,
		createTasks,
		updateTask,
		claimTask,
		claimNextTask,
		releaseTask,
		pmAssignTask,
		reportWork,
		reportCriteriaSelfCheck,
		submitForVerify,
		markAcceptanceCriteria,
		adminVerifyTask,
		adminReopenTask,
		adminCloseTask,
		adminDeleteTask,
	}
}

// sessionTools are the tools of work sessions.
func sessionTools() []entry {
	return []entry{
		createSession,
		listSessions,
		getSession,
		closeSession,
		reopenSession,
		sessionHeartbeat,
		sessionCheckinTask,
		sessionCheckoutTask,
	}
}

// collabTools are the tools of comments, notifications and activity.
func collabTools() []entry {
	return []entry{
		addComment,
		getComments,
		getNotifications,
		markNotificationRead,
		getActivity,
	}
}
