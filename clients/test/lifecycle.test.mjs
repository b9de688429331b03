// One whole lifecycle through the official TypeScript SDK's callTool() (the README's "Drive one
// idea to done"), with the admin, pm and developer keys, then every read-only tool against the
// entities it created. Every successful call is checked by Agent.call (lib.mjs): no isError, a
// structuredContent valid against the tool's outputSchema, and a text content equal to it.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { DOC, closeAll, connectAll, stack } from './lib.mjs';

const s = stack();

describe('lifecycle and read tools through callTool()', () => {
  /** @type {Record<string, import('./lib.mjs').Agent>} */
  let agents;
  let admin, pm, dev;
  // The entities the lifecycle creates; the read-tool test refers to them.
  const ids = { done: false };

  before(async () => {
    agents = await connectAll(s, ['admin', 'pm', 'developer']);
    ({ admin, pm, developer: dev } = agents);
    // tools/list first: callTool() validates structured results only for tools it has listed.
    for (const a of Object.values(agents)) await a.listTools();
  });
  after(() => closeAll(agents));

  test('drive one idea to done', async () => {
    const project = await pm.call('chorus_admin_create_project', { name: 'TS client lifecycle', description: 'made by the TypeScript SDK' });
    ids.project = project.uuid;
    const idea = await pm.call('chorus_pm_create_idea', { projectUuid: project.uuid, title: 'Dark mode', content: 'Let users pick a dark theme' });
    ids.idea = idea.uuid;
    assert.equal(idea.status, 'open', 'a new idea is open');

    // The admin holds the idea: resolving elaboration needs idea:admin (pm_agent lacks it) and
    // is the assignee's call, and a proposal is based on ideas its author holds.
    const claimed = await admin.call('chorus_claim_idea', { ideaUuid: idea.uuid });
    assert.equal(claimed.status, 'elaborating', 'claim_idea moves the idea to elaborating');
    const round = await admin.call('chorus_pm_start_elaboration', {
      ideaUuid: idea.uuid, depth: 'minimal',
      questions: [{ id: 'q1', text: 'Follow the OS setting?', category: 'functional',
        options: [{ id: 'yes', label: 'Yes' }, { id: 'no', label: 'No' }] }],
    });
    const answered = await pm.call('chorus_answer_elaboration', {
      ideaUuid: idea.uuid, roundUuid: round.uuid,
      answers: [{ questionId: 'q1', selectedOptionId: 'yes', customText: null }],
    });
    assert.equal(answered.status, 'answered', 'answering every question completes the round');
    const resolved = await admin.call('chorus_pm_validate_elaboration', { ideaUuid: idea.uuid });
    assert.equal(resolved.status, 'resolved', 'validate_elaboration resolves the elaboration');

    const proposal = await admin.call('chorus_pm_create_proposal', {
      projectUuid: project.uuid, title: 'Dark mode v1', description: 'Ship a dark theme', inputType: 'idea', inputUuids: [idea.uuid],
    });
    ids.proposal = proposal.uuid;
    assert.equal(proposal.status, 'draft');
    const prd = await pm.call('chorus_pm_add_document_draft', { proposalUuid: proposal.uuid, type: 'prd', title: 'Dark mode PRD', content: DOC });
    await pm.call('chorus_pm_add_document_draft', { proposalUuid: proposal.uuid, type: 'tech_design', title: 'Theme tokens', content: DOC });
    const d1 = await pm.call('chorus_pm_add_task_draft', {
      proposalUuid: proposal.uuid, title: 'Theme tokens', priority: 'high',
      acceptanceCriteriaItems: [{ description: 'tokens defined for both themes' }],
    });
    const d2 = await pm.call('chorus_pm_add_task_draft', {
      proposalUuid: proposal.uuid, title: 'Settings toggle', dependsOnDraftUuids: [d1.draftUuid],
      acceptanceCriteriaItems: [{ description: 'toggle persists' }],
    });
    const check = await pm.call('chorus_pm_validate_proposal', { proposalUuid: proposal.uuid });
    assert.equal(check.valid, true, `validate_proposal: expected valid, issues: ${JSON.stringify(check.issues)}`);
    const submitted = await pm.call('chorus_pm_submit_proposal', { proposalUuid: proposal.uuid });
    assert.equal(submitted.status, 'pending');

    const approved = await admin.call('chorus_admin_approve_proposal', { proposalUuid: proposal.uuid });
    assert.equal(approved.status, 'approved');
    const taskOf = (draft) => approved.materializedTasks?.find((t) => t.draftUuid === draft.draftUuid)?.taskUuid;
    const t1 = taskOf(d1);
    const t2 = taskOf(d2);
    assert.ok(t1 && t2, `approve_proposal: expected a task for each draft, got materializedTasks ${JSON.stringify(approved.materializedTasks)}`);
    ids.tasks = [t1, t2];
    ids.document = approved.materializedDocuments?.find((d) => d.draftUuid === prd.draftUuid)?.documentUuid;
    assert.ok(ids.document, `approve_proposal: no document for the PRD draft in ${JSON.stringify(approved.materializedDocuments)}`);
    const first = await admin.call('chorus_get_task', { taskUuid: t1 });
    assert.deepEqual(first.dependedBy?.map((d) => d.uuid), [t2], 'the second task depends on the first');

    for (const t of [t1, t2]) { // in dependency order
      assert.equal((await dev.call('chorus_claim_task', { taskUuid: t })).status, 'assigned', `claim_task ${t}`);
      assert.equal((await dev.call('chorus_update_task', { taskUuid: t, status: 'in_progress' })).status, 'in_progress', `update_task ${t}`);
      const task = await dev.call('chorus_get_task', { taskUuid: t });
      const criterion = task.acceptanceCriteriaItems?.[0]?.uuid;
      assert.ok(criterion, `get_task ${t}: no acceptance criterion in ${JSON.stringify(task.acceptanceCriteriaItems)}`);
      const self = await dev.call('chorus_report_criteria_self_check', {
        taskUuid: t, criteria: [{ uuid: criterion, devStatus: 'passed', devEvidence: 'tested' }],
      });
      assert.equal(self.items?.[0]?.devStatus, 'passed', `self-check ${t}`);
      assert.equal((await dev.call('chorus_submit_for_verify', { taskUuid: t })).status, 'to_verify', `submit_for_verify ${t}`);
      await admin.call('chorus_mark_acceptance_criteria', { taskUuid: t, criteria: [{ uuid: criterion, status: 'passed' }] });
      assert.equal((await admin.call('chorus_admin_verify_task', { taskUuid: t })).status, 'done', `verify ${t}`);
    }

    const comment = await dev.call('chorus_add_comment', { targetType: 'task', targetUuid: t2, content: 'Shipped behind the settings toggle.' });
    assert.equal(comment.author?.type, 'agent', 'add_comment returns the comment with its author');

    const report = await pm.call('chorus_create_report', { proposalUuid: proposal.uuid, title: 'Dark mode shipped', content: 'Both tasks verified.' });
    ids.report = report.documentUuid;
    const finished = await pm.call('chorus_get_idea', { ideaUuid: idea.uuid });
    assert.equal(finished.derivedStatus, 'done', 'the idea is done once its tasks are verified and reported');
    ids.done = true;
  });

  // Arguments for every read-only tool, from the lifecycle's entities. A read tool the server
  // adds later has no entry here and fails the test below until one is written.
  const readArgs = {
    chorus_list_projects: () => ({}),
    chorus_get_project: () => ({ projectUuid: ids.project }),
    chorus_get_ideas: () => ({ projectUuid: ids.project }),
    chorus_get_idea: () => ({ ideaUuid: ids.idea }),
    chorus_get_available_ideas: () => ({ projectUuid: ids.project }),
    chorus_get_elaboration: () => ({ ideaUuid: ids.idea }),
    chorus_get_proposals: () => ({ projectUuid: ids.project }),
    chorus_get_proposal: () => ({ proposalUuid: ids.proposal, section: 'full' }),
    chorus_pm_validate_proposal: () => ({ proposalUuid: ids.proposal }),
    chorus_get_documents: () => ({ projectUuid: ids.project }),
    chorus_get_document: () => ({ documentUuid: ids.document }),
    chorus_list_tasks: () => ({ projectUuid: ids.project }),
    chorus_get_task: () => ({ taskUuid: ids.tasks[1] }),
    chorus_get_task_dependencies: () => ({ taskUuid: ids.tasks[1], direction: 'dependsOn' }),
    chorus_get_references: () => ({ targetType: 'task', targetUuid: ids.tasks[1] }),
    chorus_get_available_tasks: () => ({ projectUuid: ids.project }),
    chorus_get_unblocked_tasks: () => ({ projectUuid: ids.project }),
    chorus_get_my_assignments: () => ({}),
    chorus_get_comments: () => ({ targetType: 'task', targetUuid: ids.tasks[1] }),
    chorus_get_activity: () => ({ projectUuid: ids.project }),
    chorus_get_project_groups: () => ({}),
    chorus_get_project_group: () => ({ groupUuid: ids.group }),
    chorus_get_group_dashboard: () => ({ groupUuid: ids.group }),
    chorus_list_project_members: () => ({ projectUuid: ids.project }),
    chorus_list_project_group_members: () => ({ groupUuid: ids.group }),
    chorus_search: () => ({ query: 'dark theme', entityTypes: ['idea', 'proposal'] }),
    chorus_search_mentionables: () => ({ query: '' }),
    chorus_list_sessions: () => ({}),
    chorus_get_session: () => ({ sessionUuid: ids.session }),
  };

  test('every read-only tool answers with valid structured content', async () => {
    assert.ok(ids.done, 'the lifecycle test did not finish, so there are no entities to read (see its failure above)');
    const readOnly = [...admin.tools.values()].filter((t) => t.annotations?.readOnlyHint === true).map((t) => t.name).sort();
    assert.ok(readOnly.length >= 10, `expected the admin's tools/list to mark the read tools readOnlyHint, got ${readOnly.join(', ')}`);
    const noArgs = readOnly.filter((n) => !(n in readArgs));
    assert.deepEqual(noArgs, [], `read-only tools with no arguments in readArgs (add them): ${noArgs.join(', ')}`);

    ids.group = (await admin.call('chorus_admin_create_project_group', { name: 'TS client group' })).uuid;
    ids.session = (await admin.call('chorus_create_session', { name: 'conformance' })).uuid;
    const results = {};
    for (const name of readOnly) {
      results[name] = await admin.call(name, readArgs[name]());
    }

    // A few facts of the finished lifecycle, so the reads are not only well-formed.
    assert.equal(results.chorus_get_project.uuid, ids.project);
    assert.equal(results.chorus_get_proposal.status, 'approved');
    assert.equal(results.chorus_get_proposal.taskDrafts?.length, 2, 'section=full returns both task drafts');
    assert.equal(results.chorus_list_tasks.total, 2);
    assert.deepEqual(results.chorus_list_tasks.tasks.map((t) => t.status), ['done', 'done']);
    assert.equal(results.chorus_get_unblocked_tasks.total, 0, 'done tasks are not open work');
    assert.equal(results.chorus_get_available_ideas.total, 0, 'the only idea is claimed');
    assert.deepEqual(results.chorus_get_documents.documents.map((d) => d.type).sort(), ['prd', 'report', 'tech_design']);
    assert.equal(results.chorus_get_document.uuid, ids.document);
    assert.equal(results.chorus_get_elaboration.status, 'resolved');
    assert.equal(results.chorus_get_task.status, 'done');
    assert.deepEqual(results.chorus_get_task_dependencies.tasks.map((t) => t.uuid), [ids.tasks[0]], 'the second task depends on the first');
    assert.equal(results.chorus_get_references.total, results.chorus_get_task.referenceCount);
    assert.ok(results.chorus_get_comments.total >= 1, 'the developer commented on the task');
    assert.ok(results.chorus_get_activity.activities.some((a) => a.action === 'verified'), 'the verification is in the activity stream');
    assert.deepEqual(results.chorus_search.results.map((r) => r.uuid).sort(), [ids.idea, ids.proposal].sort(),
      'search finds the idea and the proposal by words of their text');
    assert.ok(results.chorus_search_mentionables.results.some((r) => r.type === 'user'), 'the company owner can be mentioned');

    const uncalled = readOnly.filter((n) => !admin.called.has(n));
    assert.deepEqual(uncalled, [], `read-only tools never called successfully: ${uncalled.join(', ')}`);
  });
});
