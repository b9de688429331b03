package bench

import (
	"fmt"
	"io"

	"github.com/chorus-dev/chorus/mcp"
)

// benchSurface is what reaches the model from a connection (docs/rules.md §3.3): per preset with
// its default toolsets and with all of them (instructions included), and per toolset.
type benchSurface struct {
	Presets  []mcp.SurfaceRow `json:"presets"`
	Toolsets []mcp.SurfaceRow `json:"toolsets"`
}

// PrintSurface prints the surface as two Markdown tables and returns it.
func PrintSurface(out io.Writer) (*benchSurface, error) {
	presets, toolsets, err := mcp.SurfaceReport()
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "\n### Surface: what reaches the model (name, title, description and input schema of each listed tool, plus the instructions)\n\n")
	fmt.Fprintf(out, "| preset | toolsets | tools | bytes |\n|---|---|---:|---:|\n")
	for _, r := range presets {
		fmt.Fprintf(out, "| %s | %s | %d | %d |\n", r.Name, r.Toolsets, r.Tools, r.Bytes)
	}
	fmt.Fprintf(out, "\n| toolset (its tools alone, an admin key) | tools | bytes |\n|---|---:|---:|\n")
	for _, r := range toolsets {
		fmt.Fprintf(out, "| %s | %d | %d |\n", r.Name, r.Tools, r.Bytes)
	}
	return &benchSurface{Presets: presets, Toolsets: toolsets}, nil
}
