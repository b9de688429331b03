// Command screenshot takes docs/temporal-ui-workflows.png (`make screenshot`): it starts a
// Chorus dev stack of its own with the Temporal UI (chorus dev --ui, on free ports in a
// temporary directory), fills it through MCP with a small project (an idea whose tasks are done,
// one waiting for answers, a proposal waiting for review, tasks open, held, in progress and
// waiting for verification), sets the UI's workflow list to show Chorus's columns (docs/operations.md,
// "The Temporal UI") and captures that list with headless Chromium (Debian's
// `chromium` package; --chromium names another binary).
//
//	go -C tools/screenshot run . --repo ../.. --out docs/temporal-ui-workflows.png
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/chromedp/chromedp"
)

// columns are the workflow list's columns docs/operations.md tells operators to add, in the UI's own
// localStorage format ("namespace-workflow-table-columns": per namespace, the columns in order).
const columns = `{"default":[{"label":"Status"},{"label":"ChorusTitle"},{"label":"ChorusEntity"},{"label":"ChorusStatus"},` +
	`{"label":"ChorusProgress"},{"label":"ChorusAssigneeName"},{"label":"Workflow ID"},{"label":"Start"}]}`

func main() {
	repo := flag.String("repo", "../..", "the repository root")
	out := flag.String("out", "docs/temporal-ui-workflows.png", "the PNG to write, relative to --repo")
	chromium := flag.String("chromium", "chromium", "the Chromium binary")
	flag.Parse()
	root, err := filepath.Abs(*repo)
	if err != nil {
		log.Fatal(err)
	}
	if err := run(root, filepath.Join(root, *out), *chromium); err != nil {
		log.Fatalf("screenshot: %v", err)
	}
}

func run(root, out, chromium string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	if _, err := exec.LookPath(chromium); err != nil {
		return fmt.Errorf("no %s on PATH: install Debian's (apt-get install -y chromium) or pass --chromium", chromium)
	}
	dir, err := os.MkdirTemp("", "chorus-screenshot-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	bin := filepath.Join(dir, "chorus")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./cmd/chorus")
	build.Dir, build.Stdout, build.Stderr = root, os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		return fmt.Errorf("build chorus: %w", err)
	}
	ports, err := freePorts(3)
	if err != nil {
		return err
	}
	addr := "127.0.0.1:" + strconv.Itoa(ports[0])
	ui := "http://127.0.0.1:" + strconv.Itoa(ports[2])
	data := filepath.Join(dir, "data")
	dev := exec.CommandContext(ctx, bin, "--data-dir", data, "dev", "--ui", "--addr", addr,
		"--temporal-port", strconv.Itoa(ports[1]), "--ui-port", strconv.Itoa(ports[2]))
	dev.Dir = root // finds tools/server and tools/ui
	var devLog bytes.Buffer
	dev.Stdout, dev.Stderr = &devLog, &devLog
	dev.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := dev.Start(); err != nil {
		return err
	}
	defer func() {
		_ = dev.Process.Signal(syscall.SIGINT)
		done := make(chan struct{})
		go func() { _ = dev.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(30 * time.Second):
			_ = dev.Process.Kill()
		}
	}()
	if err := waitReady(ctx, "http://"+addr+"/readyz", ui+"/healthz"); err != nil {
		return fmt.Errorf("%w; chorus dev said:\n%s", err, devLog.String())
	}
	s := stack{bin: bin, data: data, url: "http://" + addr + "/api/mcp"}
	if err := s.fill(ctx); err != nil {
		return err
	}
	png, err := capture(ctx, chromium, ui)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, png, 0o644); err != nil {
		return err
	}
	log.Printf("screenshot: wrote %s (%d bytes)", out, len(png))
	return nil
}

// stack calls the dev stack's tools through `chorus mcp call` (README "Drive one idea to done
// from a shell").
type stack struct{ bin, data, url string }

// call runs one tool call as the agent whose key is key ("" for the admin) and returns the
// value of field ("" for none).
func (s stack) call(ctx context.Context, key, tool, field string, args ...string) (string, error) {
	argv := append([]string{"--data-dir", s.data, "mcp", "call", tool}, args...)
	if field != "" {
		argv = append(argv, "--field", field)
	}
	c := exec.CommandContext(ctx, s.bin, argv...)
	c.Env = append(os.Environ(), "CHORUS_URL="+s.url)
	if key != "" {
		c.Env = append(c.Env, "CHORUS_API_KEY="+key)
	}
	var stderr bytes.Buffer
	c.Stderr = &stderr
	b, err := c.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w: %s%s", tool, strings.Join(args, " "), err, b, stderr.String())
	}
	return strings.TrimSpace(string(b)), nil
}

func (s stack) agent(ctx context.Context, name, preset string) (string, error) {
	c := exec.CommandContext(ctx, s.bin, "--data-dir", s.data, "agent", "create", "--name", name, "--preset", preset, "--key-only")
	var stderr bytes.Buffer
	c.Stderr = &stderr
	b, err := c.Output()
	if err != nil {
		return "", fmt.Errorf("agent create %s: %w: %s", name, err, stderr.String())
	}
	return strings.TrimSpace(string(b)), nil
}

const doc = "This document explains the feature, the users it serves, and what success looks like, in enough words to pass validation."

// fill makes the project the screenshot shows.
func (s stack) fill(ctx context.Context) error {
	var err error
	must := func(v string, e error) string {
		if err == nil {
			err = e
		}
		return v
	}
	admin := ""
	ada := must(s.agent(ctx, "Ada (developer)", "developer_agent"))
	bob := must(s.agent(ctx, "Bob (developer)", "developer_agent"))
	if err != nil {
		return err
	}
	p := must(s.call(ctx, admin, "chorus_admin_create_project", "uuid", "name=Website"))

	// An idea elaborated, proposed, approved and worked to done.
	i := must(s.call(ctx, admin, "chorus_pm_create_idea", "uuid", "projectUuid="+p, "title=Dark mode",
		"content=Let users pick a dark theme"))
	must(s.call(ctx, admin, "chorus_claim_idea", "", "ideaUuid="+i))
	must(s.call(ctx, admin, "chorus_pm_skip_elaboration", "", "ideaUuid="+i, "reason=Clear enough"))
	pr := must(s.call(ctx, admin, "chorus_pm_create_proposal", "uuid", "projectUuid="+p, "title=Dark mode v1",
		"description=Ship a dark theme", "inputType=idea", `inputUuids=["`+i+`"]`))
	must(s.call(ctx, admin, "chorus_pm_add_document_draft", "", "proposalUuid="+pr, "type=prd", "title=Dark mode PRD",
		"content="+doc))
	d1 := must(s.call(ctx, admin, "chorus_pm_add_task_draft", "draftUuid", "proposalUuid="+pr, "title=Theme tokens",
		"priority=high", `acceptanceCriteriaItems=[{"description":"tokens defined for both themes"}]`))
	must(s.call(ctx, admin, "chorus_pm_add_task_draft", "", "proposalUuid="+pr, "title=Settings toggle",
		`dependsOnDraftUuids=["`+d1+`"]`, `acceptanceCriteriaItems=[{"description":"toggle persists"}]`))
	must(s.call(ctx, admin, "chorus_pm_submit_proposal", "", "proposalUuid="+pr))
	t1 := must(s.call(ctx, admin, "chorus_admin_approve_proposal", "materializedTasks.0.taskUuid", "proposalUuid="+pr))
	t2 := must(s.call(ctx, admin, "chorus_get_task", "dependedBy.0.uuid", "taskUuid="+t1))
	if err != nil {
		return err
	}
	for _, t := range []string{t1, t2} {
		must(s.call(ctx, ada, "chorus_claim_task", "", "taskUuid="+t))
		must(s.call(ctx, ada, "chorus_update_task", "", "taskUuid="+t, "status=in_progress"))
		if t == t2 {
			break // the second stays in progress
		}
		c := must(s.call(ctx, admin, "chorus_get_task", "acceptanceCriteriaItems.0.uuid", "taskUuid="+t))
		must(s.call(ctx, ada, "chorus_report_criteria_self_check", "", "taskUuid="+t,
			`criteria=[{"uuid":"`+c+`","devStatus":"passed","devEvidence":"tested"}]`))
		must(s.call(ctx, ada, "chorus_submit_for_verify", "", "taskUuid="+t))
		must(s.call(ctx, admin, "chorus_mark_acceptance_criteria", "", "taskUuid="+t, `criteria=[{"uuid":"`+c+`","status":"passed"}]`))
		must(s.call(ctx, admin, "chorus_admin_verify_task", "", "taskUuid="+t))
	}

	// An idea waiting for answers, and a proposal waiting for review.
	sso := must(s.call(ctx, admin, "chorus_pm_create_idea", "uuid", "projectUuid="+p, "title=Single sign-on",
		"content=Log in with the company account"))
	must(s.call(ctx, admin, "chorus_claim_idea", "", "ideaUuid="+sso))
	must(s.call(ctx, admin, "chorus_pm_start_elaboration", "", "ideaUuid="+sso, "depth=minimal",
		`questions=[{"id":"q1","text":"Which identity provider?","category":"functional","options":[{"id":"okta","label":"Okta"},{"id":"google","label":"Google"}]}]`))
	search := must(s.call(ctx, admin, "chorus_pm_create_proposal", "uuid", "projectUuid="+p, "title=Search v2",
		"description=Faster search", "inputType=idea", `inputUuids=["`+i+`"]`))
	must(s.call(ctx, admin, "chorus_pm_add_document_draft", "", "proposalUuid="+search, "type=prd", "title=Search PRD",
		"content="+doc))
	must(s.call(ctx, admin, "chorus_pm_add_task_draft", "", "proposalUuid="+search, "title=Index titles",
		`acceptanceCriteriaItems=[{"description":"titles searchable"}]`))
	must(s.call(ctx, admin, "chorus_pm_submit_proposal", "", "proposalUuid="+search))

	// Quick tasks: one waiting for verification, one held, one open.
	var q []string
	for _, title := range []string{"Fix the login redirect", "Upgrade Temporal to 1.32", "Update the README"} {
		q = append(q, must(s.call(ctx, admin, "chorus_create_tasks", "tasks.0.uuid", "projectUuid="+p,
			`tasks=[{"title":"`+title+`","acceptanceCriteriaItems":[{"description":"done as described"}]}]`)))
	}
	if err != nil {
		return err
	}
	fix, upgrade := q[0], q[1]
	must(s.call(ctx, bob, "chorus_claim_task", "", "taskUuid="+fix))
	must(s.call(ctx, bob, "chorus_update_task", "", "taskUuid="+fix, "status=in_progress"))
	must(s.call(ctx, bob, "chorus_submit_for_verify", "", "taskUuid="+fix))
	must(s.call(ctx, bob, "chorus_claim_task", "", "taskUuid="+upgrade))
	return err
}

// capture opens the UI's workflow list with the columns set and returns it as a PNG.
func capture(ctx context.Context, chromium, ui string) ([]byte, error) {
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chromium), chromedp.WindowSize(1600, 960),
		chromedp.Flag("headless", true))
	if os.Geteuid() == 0 {
		opts = append(opts, chromedp.NoSandbox) // Chromium refuses to run as root with its sandbox
	}
	actx, cancel := chromedp.NewExecAllocator(ctx, opts...)
	defer cancel()
	bctx, cancel := chromedp.NewContext(actx)
	defer cancel()
	list := ui + "/namespaces/default/workflows"
	err := chromedp.Do(bctx,
		chromedp.Navigate(ui+"/healthz"),
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := chromedp.Evaluate[any](`localStorage.setItem("namespace-workflow-table-columns", `+strconv.Quote(columns)+`)`)(ctx, t)
			return err
		}),
		chromedp.Navigate(list),
		// Until the list shows every workflow with its title and the second task in progress.
		chromedp.Func(func(ctx context.Context, t *chromedp.Target) error {
			_, err := chromedp.Poll[bool](`document.body.innerText.includes("Settings toggle") && `+
				`document.body.innerText.includes("Update the README") && document.body.innerText.includes("in_progress")`,
				chromedp.WithPollingTimeout(2*time.Minute))(ctx, t)
			return err
		}),
		chromedp.Sleep(time.Second), // fonts and column widths settle
	)
	if err != nil {
		return nil, fmt.Errorf("open the workflow list in Chromium: %w", err)
	}
	return chromedp.Run(bctx, chromedp.FullScreenshot(100))
}

func waitReady(ctx context.Context, urls ...string) error {
	for _, u := range urls {
		for {
			resp, err := http.Get(u)
			if err == nil {
				_ = resp.Body.Close()
				if resp.StatusCode == http.StatusOK {
					break
				}
			}
			select {
			case <-ctx.Done():
				return errors.New("the dev stack did not answer " + u + " in time")
			case <-time.After(500 * time.Millisecond): // poll interval
			}
		}
	}
	return nil
}

func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer ln.Close()
		ports = append(ports, ln.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
