package console

import (
	"fmt"
	"slices"

	"github.com/chorus-dev/chorus/store"
	"github.com/chorus-dev/chorus/vocab"
)

// The dependency graph of an idea's tasks, drawn on the server as SVG with no script: tasks in
// layers by dependency depth (a task with no dependency among the drawn tasks is in layer 1, any
// other one layer right of its deepest dependency), an arrow from each dependency to the task
// that depends on it, each box colored by status (classes g-<status> in console.css).

// Box sizes and gaps of the drawing, in SVG user units (pixels at 100%).
const (
	graphNodeW, graphNodeH = 210, 50
	graphGapX, graphGapY   = 70, 14
	graphPad               = 10
	graphTitleRunes        = 30
)

// graphNode is a drawn task (a flat struct: see boardColumn).
type graphNode struct {
	UUID, Title, Priority string
	Status                vocab.TaskStatus
	Layer, Row            int
	X, Y                  int
	// Label is the title cut to fit its box; DependsOn names the drawn tasks it depends on;
	// Outside counts its dependencies on tasks the graph does not draw.
	Label     string
	DependsOn []*graphNode
	Outside   int
}

// graphEdge is an arrow, as an SVG path from a dependency's right side to its dependent's left.
type graphEdge struct {
	Path string
	// Blocking: the dependency is neither done nor closed (docs/rules.md §5.3).
	Blocking bool
}

// graphLayout is the drawing: its size, boxes, arrows and the layers for the list beside it.
type graphLayout struct {
	Width, Height int
	// NodeW and NodeH are every box's size.
	NodeW, NodeH int
	Nodes        []*graphNode
	Edges        []graphEdge
	Layers       [][]*graphNode
}

// layoutGraph places tasks in layers by dependency depth and rows in the order of tasks
// (priority, then newest), then each layer after the first by the mean row of its dependencies,
// so arrows cross less. Edges to tasks not in tasks are counted on their dependent, not drawn.
func layoutGraph(tasks []store.Task, edges []store.DependencyEdge) graphLayout {
	byID := make(map[string]*graphNode, len(tasks))
	nodes := make([]*graphNode, len(tasks))
	for i, t := range tasks {
		nodes[i] = &graphNode{UUID: t.UUID, Title: t.Title, Priority: t.Priority, Status: t.Status,
			Label: graphClip(t.Title, graphTitleRunes)}
		byID[t.UUID] = nodes[i]
	}
	for _, e := range edges {
		n, dep := byID[e.Task], byID[e.DependsOn]
		switch {
		case n == nil:
		case dep == nil:
			n.Outside++
		default:
			n.DependsOn = append(n.DependsOn, dep)
		}
	}
	layers := assignLayers(nodes)
	l := graphLayout{NodeW: graphNodeW, NodeH: graphNodeH}
	l.Nodes, l.Layers = nodes, layers
	maxRows := 0
	for li, layer := range layers {
		if li > 0 {
			slices.SortStableFunc(layer, func(a, b *graphNode) int { return meanRow(a) - meanRow(b) })
		}
		for r, n := range layer {
			n.Row, n.X, n.Y = r, graphPad+li*(graphNodeW+graphGapX), graphPad+r*(graphNodeH+graphGapY)
		}
		maxRows = max(maxRows, len(layer))
	}
	for _, n := range nodes {
		for _, d := range n.DependsOn {
			x1, y1, x2, y2 := d.X+graphNodeW, d.Y+graphNodeH/2, n.X, n.Y+graphNodeH/2
			l.Edges = append(l.Edges, graphEdge{Blocking: !d.Status.Resolved(),
				Path: fmt.Sprintf("M%d %d C%d %d, %d %d, %d %d", x1, y1, x1+graphGapX/2, y1, x2-graphGapX/2, y2, x2-2, y2)})
		}
	}
	if len(layers) > 0 {
		l.Width = 2*graphPad + len(layers)*(graphNodeW+graphGapX) - graphGapX
		l.Height = 2*graphPad + maxRows*(graphNodeH+graphGapY) - graphGapY
	}
	return l
}

// assignLayers gives each node its layer: 0 without drawn dependencies, else one more than its
// deepest dependency's. Dependencies have no cycle (docs/rules.md §5.3); should a stored cycle
// exist, its nodes go to the last layer rather than looping.
func assignLayers(nodes []*graphNode) [][]*graphNode {
	depth := make(map[*graphNode]int, len(nodes))
	var visit func(n *graphNode, onPath map[*graphNode]bool) int
	visit = func(n *graphNode, onPath map[*graphNode]bool) int {
		if d, ok := depth[n]; ok {
			return d
		}
		if onPath[n] {
			return len(nodes)
		}
		onPath[n] = true
		d := 0
		for _, dep := range n.DependsOn {
			d = max(d, visit(dep, onPath)+1)
		}
		delete(onPath, n)
		d = min(d, len(nodes))
		depth[n] = d
		return d
	}
	var layers [][]*graphNode
	for _, n := range nodes {
		d := visit(n, map[*graphNode]bool{})
		for len(layers) <= d {
			layers = append(layers, nil)
		}
		n.Layer = d
	}
	for _, n := range nodes {
		layers[n.Layer] = append(layers[n.Layer], n)
	}
	return slices.DeleteFunc(layers, func(l []*graphNode) bool { return len(l) == 0 })
}

// meanRow is the mean row of a node's drawn dependencies (0 without any).
func meanRow(n *graphNode) int {
	if len(n.DependsOn) == 0 {
		return 0
	}
	sum := 0
	for _, d := range n.DependsOn {
		sum += d.Row
	}
	return sum * 10 / len(n.DependsOn) // tenths, so close means still sort apart
}

// graphClip cuts s to n runes, marking a cut with an ellipsis.
func graphClip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}
