package mcp

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chorus-dev/chorus/perm"
)

// BenchmarkNoisyNeighbor measures what a noisy key does to another key's call (issue 18: 300
// concurrent creates from one key made another owner's 40 ms call take 11.5 s). Each iteration
// has the noisy key send a burst of 300 concurrent chorus_pm_create_idea calls and, once they are
// sent, one create from a quiet key of the same company, and times the quiet one; "idle" times
// it alone. The quiet call's p50 and p99 are reported, with how many of the burst were refused.
// Two more cases tell the burst's parts apart: "steady-writer" has the noisy key send one create
// after another (a busy neighbour within every limit), "burst-reads" sends the burst as reads
// (what the 300 requests cost without their writes).
//
// The noisy agent is a process of its own (this test binary run again as noisyClientMain), as
// an agent is: its 300 connections and requests are its own CPU, shared with the server's by
// the operating system, not goroutines of the server's process. It keeps its connections
// between bursts, as an agent's HTTP client does.
//
// TestNoisyKeyCannotCrowdOutAnother holds the structure (the noisy key is refused beyond its
// caps, the quiet one never). Results are in docs/performance.md ("Noisy neighbours"). Run it
// with
//
//	go test ./mcp -run '^$' -bench NoisyNeighbor -benchtime 10x -timeout 60m
func BenchmarkNoisyNeighbor(b *testing.B) {
	for _, c := range []struct {
		name   string
		burst  int
		limits Limits
		mode   string // the noisy agent's calls: "create", "read" or "steady"
	}{
		{"idle", 0, DefaultLimits(), "create"},
		{"steady-writer", 0, DefaultLimits(), "steady"},
		{"burst-reads", 300, DefaultLimits(), "read"},
		{"burst-default-limits", 300, DefaultLimits(), "create"},
		{"burst-no-limits", 300, Limits{}, "create"},
	} {
		b.Run(c.name, func(b *testing.B) {
			base := newFlowEnv(b, "sqlite")
			e := base.edgeProcess(c.limits, EdgeOptions{}, nil)
			noisy, quiet := e.agent("Noisy", perm.PMAgent), e.agent("Quiet", perm.PMAgent)
			var project struct{ UUID string }
			ok(b, e.client(quiet), "chorus_admin_create_project", map[string]any{"name": "Apollo"}, &project)
			n := 0
			post := func(key string) int {
				n++
				resp, err := http.DefaultClient.Do(createRequest(e.url, key, project.UUID, "create", fmt.Sprintf("Idea %d", n)))
				if err != nil {
					return 0
				}
				drain(resp)
				return resp.StatusCode
			}
			if code := post(quiet); code != http.StatusOK { // warm the worker
				b.Fatalf("warm-up answered %d", code)
			}
			agent := startNoisyAgent(b, e.url, noisy, project.UUID, c.mode)
			if c.burst > 0 {
				agent.burst(b, c.burst) // dial its connections; the key is known from now on
				agent.wait(b)
			}
			if c.mode == "steady" {
				agent.steady(b)
			}
			var quietTimes []time.Duration
			refused, sent := 0, 0
			b.ResetTimer()
			for range b.N {
				if c.burst > 0 {
					agent.burst(b, c.burst)
				}
				t0 := time.Now()
				if code := post(quiet); code != http.StatusOK {
					b.Fatalf("the quiet key's call was answered %d", code)
				}
				quietTimes = append(quietTimes, time.Since(t0))
				if c.burst > 0 {
					codes := agent.wait(b)
					sent += c.burst
					refused += codes[http.StatusTooManyRequests]
				}
			}
			b.StopTimer()
			agent.stop(b)
			slices.Sort(quietTimes)
			at := func(q float64) float64 {
				return float64(quietTimes[min(len(quietTimes)-1, int(q*float64(len(quietTimes))))].Microseconds()) / 1000
			}
			b.ReportMetric(at(0.5), "quiet-p50-ms")
			b.ReportMetric(at(0.99), "quiet-p99-ms")
			if sent > 0 {
				b.ReportMetric(float64(refused)/float64(sent), "burst-refused-ratio")
			}
		})
	}
}

// createRequest is one tools/call of the noisy or quiet agent: a chorus_pm_create_idea titled
// title, or (mode "read") a chorus_get_project.
func createRequest(url, key, project, mode, title string) *http.Request {
	call := toolCallBody(1, "chorus_pm_create_idea", map[string]any{"projectUuid": project, "title": title})
	if mode == "read" {
		call = toolCallBody(1, "chorus_get_project", map[string]any{"projectUuid": project})
	}
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(call))
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(ToolsetsHeader, "all")
	return req
}

// drain reads an answer to its end and closes it, as an agent's client does: a body closed unread
// costs its connection, and the redials would be the benchmark's cost, not the server's.
func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// noisyAgent is the noisy agent's process, driven line by line: "burst N" sends N calls at
// once and answers "sent" when all N have started, then "codes <status>:<count> ..." when all
// have been answered; "steady" starts one call after another until "stop".
type noisyAgent struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

const noisyAgentEnv = "CHORUS_BENCH_NOISY_AGENT" // "url key project mode", set in the agent's process

func startNoisyAgent(b *testing.B, url, key, project, mode string) *noisyAgent {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), noisyAgentEnv+"="+strings.Join([]string{url, key, project, mode}, " "))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	a := &noisyAgent{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	b.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return a
}

func (a *noisyAgent) send(b *testing.B, line string) {
	b.Helper()
	if _, err := fmt.Fprintln(a.in, line); err != nil {
		b.Fatalf("noisy agent: %v", err)
	}
}

func (a *noisyAgent) read(b *testing.B) string {
	b.Helper()
	if !a.out.Scan() {
		b.Fatalf("noisy agent ended: %v", a.out.Err())
	}
	return a.out.Text()
}

// burst has the agent send n calls at once and returns when every one has been sent.
func (a *noisyAgent) burst(b *testing.B, n int) {
	a.send(b, fmt.Sprintf("burst %d", n))
	if got := a.read(b); got != "sent" {
		b.Fatalf("noisy agent answered %q to a burst", got)
	}
}

// wait returns the statuses of the last burst's answers, counted.
func (a *noisyAgent) wait(b *testing.B) map[int]int {
	line := a.read(b)
	codes := map[int]int{}
	for _, f := range strings.Fields(strings.TrimPrefix(line, "codes")) {
		status, count, _ := strings.Cut(f, ":")
		s, _ := strconv.Atoi(status)
		c, _ := strconv.Atoi(count)
		codes[s] = c
	}
	return codes
}

func (a *noisyAgent) steady(b *testing.B) {
	a.send(b, "steady")
	time.Sleep(200 * time.Millisecond) // its first calls are under way
}

func (a *noisyAgent) stop(b *testing.B) {
	a.send(b, "stop")
	_ = a.in.Close()
	_ = a.cmd.Wait()
}

// noisyAgentMain is the noisy agent's process (see noisyAgent), run by TestMain when
// noisyAgentEnv is set.
func noisyAgentMain(spec string) int {
	f := strings.Fields(spec)
	if len(f) != 4 {
		fmt.Fprintln(os.Stderr, "noisy agent: want url key project mode")
		return 2
	}
	url, key, project, mode := f[0], f[1], f[2], f[3]
	client := &http.Client{Transport: &http.Transport{MaxIdleConns: 1000, MaxIdleConnsPerHost: 1000}}
	call := func(n int) int {
		resp, err := client.Do(createRequest(url, key, project, mode, fmt.Sprintf("Noise %d", n)))
		if err != nil {
			return 0
		}
		drain(resp)
		return resp.StatusCode
	}
	n := 0
	stop := make(chan struct{})
	var steady sync.WaitGroup
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		cmd, arg, _ := strings.Cut(in.Text(), " ")
		switch cmd {
		case "burst":
			count, _ := strconv.Atoi(arg)
			codes := make(chan int, count)
			var started sync.WaitGroup
			for range count {
				n++
				started.Add(1)
				go func(n int) {
					started.Done()
					codes <- call(n)
				}(n)
			}
			started.Wait()
			fmt.Println("sent")
			tally := map[int]int{}
			for range count {
				tally[<-codes]++
			}
			var b strings.Builder
			b.WriteString("codes")
			for s, c := range tally {
				fmt.Fprintf(&b, " %d:%d", s, c)
			}
			fmt.Println(b.String())
		case "steady":
			steady.Go(func() {
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
						call(i)
					}
				}
			})
		case "stop":
			close(stop)
			steady.Wait()
			return 0
		}
	}
	return 0
}
