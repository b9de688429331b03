package workflows

// TaskQueue is the one task queue every Chorus workflow and activity runs on.
const TaskQueue = "chorus"

// Namespace is the Temporal namespace Chorus uses unless configured otherwise.
const Namespace = "default"
