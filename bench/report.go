package bench

import (
	"os"
	"runtime"
	"strings"
	"time"
)

// machine describes where the bench ran.
type machine struct {
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpuModel,omitempty"`
	GoVersion string `json:"goVersion"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	// LoadAvg is /proc/loadavg's 1, 5 and 15 minute figures when the run started and ended:
	// other work on the machine shows in the figures.
	LoadAvgStart string `json:"loadAvgStart,omitempty"`
	LoadAvgEnd   string `json:"loadAvgEnd,omitempty"`
}

// loadAvg is the first three fields of /proc/loadavg, "" where there is none.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return ""
	}
	return strings.Join(f[:3], " ")
}

func thisMachine() machine {
	m := machine{CPUs: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH, LoadAvgStart: loadAvg()}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPUModel = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

// benchReport is the JSON file.
type benchReport struct {
	Started  time.Time          `json:"started"`
	Seconds  float64            `json:"seconds"`
	Machine  machine            `json:"machine"`
	Target   map[string]any     `json:"target"`
	Settings benchSettings      `json:"settings"`
	Floors   map[string]summary `json:"floors"`
	Phases   []*phaseResult     `json:"phases"`
	Surface  *benchSurface      `json:"surface"`
	// Soak is the soak phase's samples of the bounded tables' sizes.
	Soak []soakSample `json:"soak,omitempty"`
}

type benchSettings struct {
	Phases        []string `json:"phases"`
	Agents        int      `json:"agents"`
	TasksPerAgent int      `json:"tasksPerAgent"`
	Rounds        int      `json:"rounds"`
	Racers        int      `json:"racers"`
	RaceRounds    int      `json:"raceRounds"`
	ReadTasks     []int    `json:"readTasks"`
	ReadCalls     int      `json:"readCalls"`
	BulkBatches   int      `json:"bulkBatches"`
	BulkSize      int      `json:"bulkSize"`
	FloorOps      int      `json:"floorOps"`
	FloorPer      int      `json:"floorPerClient"`
	Streams       int      `json:"streams,omitempty"`
	EventRounds   int      `json:"eventRounds,omitempty"`
	WebhookRate   int      `json:"webhookRate,omitempty"`
	WebhookSecs   int      `json:"webhookSeconds,omitempty"`
	WebhookWrites string   `json:"webhookWrites,omitempty"`
	DynamicConfig []string `json:"dynamicConfig,omitempty"`
}
