// The permission table (docs/rules.md §6.1: presets -> bits; §6.2: tool -> bit or public),
// written down here from that document and not from the server's code, so that tools/list
// is checked against the contract rather than against itself.
//
// Only the tools this server serves are listed (docs/tools.md). The rules also name
// tools that are not served yet and are left out on purpose: none at present. When a tool is
// added, add it here; the tools/list test fails until then, which is the point.

export const RESOURCES = ['idea', 'proposal', 'document', 'task', 'project'];
export const ACTIONS = ['read', 'write', 'admin'];

const reads = RESOURCES.map((r) => `${r}:read`);

// docs/rules.md §6.1. No bit implies another: task:admin without task:write does not expose claim_task.
export const PRESETS = {
  developer_agent: [...reads, 'task:write'],
  pm_agent: [...reads, 'idea:write', 'proposal:write', 'document:write', 'task:write', 'project:write'],
  admin_agent: RESOURCES.flatMap((r) => ACTIONS.map((a) => `${r}:${a}`)),
};

// docs/rules.md §6.2, served tools only. 'public' tools need no bit and are listed for every key.
export const TOOL_PERMISSIONS = {
  // public
  chorus_checkin: 'public',
  chorus_list_projects: 'public',
  chorus_get_project: 'public',
  chorus_get_project_groups: 'public',
  chorus_list_project_members: 'public',
  chorus_list_project_group_members: 'public',
  chorus_get_project_group: 'public',
  chorus_get_group_dashboard: 'public',
  chorus_get_my_assignments: 'public',
  chorus_get_ideas: 'public',
  chorus_get_idea: 'public',
  chorus_get_available_ideas: 'public',
  chorus_get_elaboration: 'public',
  chorus_answer_elaboration: 'public',
  chorus_get_proposals: 'public',
  chorus_get_proposal: 'public',
  chorus_get_documents: 'public',
  chorus_get_document: 'public',
  chorus_list_tasks: 'public',
  chorus_get_task: 'public',
  chorus_get_task_dependencies: 'public',
  chorus_get_references: 'public',
  chorus_get_available_tasks: 'public',
  chorus_get_unblocked_tasks: 'public',
  chorus_create_tasks: 'public',
  chorus_update_task: 'public',
  chorus_add_comment: 'public',
  chorus_get_comments: 'public',
  chorus_get_notifications: 'public',
  chorus_mark_notification_read: 'public',
  chorus_get_activity: 'public',
  chorus_search: 'public',
  chorus_search_mentionables: 'public',
  chorus_create_session: 'public',
  chorus_list_sessions: 'public',
  chorus_get_session: 'public',
  chorus_close_session: 'public',
  chorus_reopen_session: 'public',
  chorus_session_heartbeat: 'public',
  chorus_session_checkin_task: 'public',
  chorus_session_checkout_task: 'public',

  // idea:write
  chorus_claim_idea: 'idea:write',
  chorus_release_idea: 'idea:write',
  chorus_pm_create_idea: 'idea:write',
  chorus_edit_idea: 'idea:write',
  chorus_pm_start_elaboration: 'idea:write',
  chorus_pm_skip_elaboration: 'idea:write',
  // idea:admin
  chorus_pm_validate_elaboration: 'idea:admin',
  chorus_admin_delete_idea: 'idea:admin',
  chorus_pm_assign_idea: 'idea:admin',
  chorus_move_idea: 'idea:write',

  // proposal:write
  chorus_pm_create_proposal: 'proposal:write',
  chorus_pm_validate_proposal: 'proposal:write',
  chorus_pm_submit_proposal: 'proposal:write',
  chorus_pm_add_document_draft: 'proposal:write',
  chorus_pm_add_task_draft: 'proposal:write',
  chorus_pm_update_document_draft: 'proposal:write',
  chorus_pm_update_task_draft: 'proposal:write',
  chorus_pm_remove_document_draft: 'proposal:write',
  chorus_pm_remove_task_draft: 'proposal:write',
  chorus_pm_reject_proposal: 'proposal:write',
  chorus_pm_revoke_proposal: 'proposal:write',
  chorus_pm_assign_task: 'proposal:write',
  // proposal:admin
  chorus_admin_approve_proposal: 'proposal:admin',
  chorus_admin_close_proposal: 'proposal:admin',

  // document:write (chorus_create_report is gated although it is named like a public tool)
  chorus_pm_create_document: 'document:write',
  chorus_pm_update_document: 'document:write',
  chorus_create_report: 'document:write',
  chorus_add_reference: 'document:write',
  chorus_update_reference: 'document:write',
  chorus_remove_reference: 'document:write',
  // document:admin
  chorus_admin_delete_document: 'document:admin',

  // task:write
  chorus_claim_task: 'task:write',
  chorus_claim_next_task: 'task:write',
  chorus_release_task: 'task:write',
  chorus_submit_for_verify: 'task:write',
  chorus_report_criteria_self_check: 'task:write',
  chorus_report_work: 'task:write',
  // task:admin
  chorus_admin_verify_task: 'task:admin',
  chorus_admin_reopen_task: 'task:admin',
  chorus_admin_close_task: 'task:admin',
  chorus_mark_acceptance_criteria: 'task:admin',
  chorus_admin_delete_task: 'task:admin',

  // project:write
  chorus_admin_create_project: 'project:write',
  chorus_admin_create_project_group: 'project:write',
  chorus_admin_update_project_group: 'project:write',
  chorus_admin_delete_project_group: 'project:admin',
  chorus_admin_move_project_to_group: 'project:write',
  chorus_admin_add_project_member: 'project:write',
  chorus_admin_remove_project_member: 'project:write',
  chorus_admin_add_project_group_member: 'project:write',
  chorus_admin_remove_project_group_member: 'project:write',
};

/**
 * effectiveBits is the union of the presets' bits and the custom bits (docs/rules.md §1.3, §6.1).
 * An unknown preset name throws: a typo in the driver must not silently shrink the set.
 * @param {string[]} presets
 * @param {string[]} permissions
 * @returns {Set<string>}
 */
export function effectiveBits(presets = [], permissions = []) {
  const bits = new Set();
  for (const p of presets) {
    if (!(p in PRESETS)) throw new Error(`unknown preset ${JSON.stringify(p)}; known: ${Object.keys(PRESETS).join(', ')}`);
    for (const b of PRESETS[p]) bits.add(b);
  }
  for (const b of permissions) bits.add(b.trim().toLowerCase());
  return bits;
}

/**
 * expectedToolNames is the sorted list of tools that tools/list must show to an agent with
 * these presets and custom bits: every public tool and every tool whose bit is held.
 * @param {string[]} presets
 * @param {string[]} permissions
 * @returns {string[]}
 */
export function expectedToolNames(presets, permissions) {
  const bits = effectiveBits(presets, permissions);
  return Object.entries(TOOL_PERMISSIONS)
    .filter(([, bit]) => bit === 'public' || bits.has(bit))
    .map(([name]) => name)
    .sort();
}
