package workflows

// entityMemo is the memo of an idea, proposal or task workflow: its title and, when known, its
// project's name (a workflow started before the name was kept has only the title).
func entityMemo(title, projectName string) map[string]any {
	m := map[string]any{"title": title}
	if projectName != "" {
		m["project"] = projectName
	}
	return m
}

// publishedMemo is entityMemo for UpsertMemo: an unknown project name removes the memo's
// "project" (Temporal drops a memo key upserted as nil), so a name that is no longer true never
// stays behind.
func publishedMemo(title, projectName string) map[string]any {
	m := entityMemo(title, projectName)
	if projectName == "" {
		m["project"] = nil
	}
	return m
}

// batchMemo is the memo of a chorus_create_tasks batch workflow: its project (uuid and, when
// known, name) and how many tasks it creates.
func batchMemo(in CreateTasksInput) map[string]any {
	m := map[string]any{"projectUuid": in.ProjectUUID, "tasks": len(in.Tasks)}
	if in.ProjectName != "" {
		m["project"] = in.ProjectName
	}
	return m
}
