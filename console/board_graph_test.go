package console

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// The layered layout: a task without drawn dependencies is in the first layer, any other one
// layer right of its deepest dependency; an arrow per drawn dependency, red while it blocks; a
// dependency on an undrawn task is counted, not drawn; a stored cycle ends the walk.
func TestBoardGraphLayout(t *testing.T) {
	task := func(id string, st vocab.TaskStatus) store.Task {
		return store.Task{UUID: id, Title: "Task " + id, Status: st}
	}
	tasks := []store.Task{task("a", vocab.TaskDone), task("b", vocab.TaskOpen), task("c", vocab.TaskOpen), task("d", vocab.TaskOpen)}
	edges := []store.DependencyEdge{{Task: "c", DependsOn: "a"}, {Task: "c", DependsOn: "b"}, {Task: "d", DependsOn: "c"},
		{Task: "d", DependsOn: "a"}, {Task: "b", DependsOn: "zz"}}
	l := layoutGraph(tasks, edges)
	layer := map[string]int{}
	for _, n := range l.Nodes {
		layer[n.UUID] = n.Layer
	}
	require.Equal(t, map[string]int{"a": 0, "b": 0, "c": 1, "d": 2}, layer)
	require.Len(t, l.Edges, 4)
	blocking := 0
	for _, e := range l.Edges {
		if e.Blocking {
			blocking++
		}
	}
	require.Equal(t, 2, blocking, "c after b, d after c; the edges from a (done) no longer block")
	require.Equal(t, 1, l.Nodes[1].Outside)
	require.Len(t, l.Layers, 3)
	require.Equal(t, 2*graphPad+3*(graphNodeW+graphGapX)-graphGapX, l.Width)
	require.Equal(t, 2*graphPad+2*(graphNodeH+graphGapY)-graphGapY, l.Height)
	for _, n := range l.Nodes {
		for _, d := range n.DependsOn {
			require.Less(t, d.X, n.X, "arrows go right")
		}
	}

	cyc := layoutGraph([]store.Task{task("x", vocab.TaskOpen), task("y", vocab.TaskOpen)},
		[]store.DependencyEdge{{Task: "x", DependsOn: "y"}, {Task: "y", DependsOn: "x"}})
	require.Len(t, cyc.Nodes, 2, "a cycle is drawn, not looped on")
	require.Equal(t, "Task…", graphClip("Task x", 5))
	empty := layoutGraph(nil, nil)
	require.Empty(t, empty.Nodes)
	require.Zero(t, empty.Width+empty.Height, "nothing to draw")
}
