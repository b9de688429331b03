package wftest

import (
	"context"
	"reflect"
	"runtime"
	"strings"
	"sync"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"
)

// InjectedFailureType is the ApplicationError type of the failures FailAfterCommit injects.
// It is retryable unless a retry policy names it.
const InjectedFailureType = "wftest.InjectedAfterCommit"

// ActivityFaults is a worker interceptor that injects faults into activities by name, after
// they ran for real: pass it in worker.Options.Interceptors, then arm it from the test.
//
//	f := wftest.NewActivityFaults()
//	w := worker.New(c, queue, worker.Options{Interceptors: []interceptor.WorkerInterceptor{f}})
//	f.FailAfterCommit(wftest.ActivityName(acts.ApplyTaskChange), 1)
//
// Names are the registered activity names, as activity.GetInfo(ctx).ActivityType.Name reports
// them; for activities registered as a struct's methods (workflows.Register does
// RegisterActivity(a)) that is the method's name, e.g. "ApplyTaskChange": see ActivityName. It
// applies to regular and local activities alike. Its methods are safe for concurrent use.
type ActivityFaults struct {
	interceptor.WorkerInterceptorBase

	mu        sync.Mutex
	failAfter map[string]int
	before    map[string][]func()
	after     map[string][]func()
	runs      map[string]int
	injected  map[string]int
}

// NewActivityFaults returns an interceptor with nothing armed: every activity runs and reports
// normally, and is counted.
func NewActivityFaults() *ActivityFaults {
	return &ActivityFaults{failAfter: map[string]int{}, before: map[string][]func(){}, after: map[string][]func(){}, runs: map[string]int{},
		injected: map[string]int{}}
}

// FailAfterCommit arms the next n successful executions of the named activity on this worker
// to run for real (their database transactions commit) and then fail with a retryable
// ApplicationError of type InjectedFailureType instead of reporting their result, as when the
// acknowledgement is lost: Temporal retries the activity under its retry policy. Executions
// that fail by themselves pass through and do not use up n. Calls add up.
func (f *ActivityFaults) FailAfterCommit(name string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failAfter[name] += n
}

// OnceAfter arms the next successful execution of the named activity on this worker to call
// hook once it returned, and then to drop its result: nothing is reported to Temporal, as when
// the worker dies between the commit and the completion, so the server retries the activity
// only when its StartToCloseTimeout (or heartbeat timeout) expires, on whichever worker polls
// then. Use the hook to stop the worker (w.Stop is safe to call from it with the default
// WorkerStopTimeout of 0; with a longer one, signal the test goroutine to stop it instead), or to
// take the database or the Temporal server down at that moment. The hook runs on the activity's
// goroutine. A local activity cannot leave its result unreported: for one, the hook runs and the
// result is reported. Hooks armed several times run on successive executions, in order.
func (f *ActivityFaults) OnceAfter(name string, hook func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.after[name] = append(f.after[name], hook)
}

// OnceBefore arms the next execution of the named activity on this worker to call hook just
// before it runs, e.g. to take the database down under a write that is about to happen. Hooks
// armed several times run on successive executions, in order.
func (f *ActivityFaults) OnceBefore(name string, hook func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.before[name] = append(f.before[name], hook)
}

// Runs is how many executions of the named activity this worker has finished (successes and
// failures, injected or not) since NewActivityFaults.
func (f *ActivityFaults) Runs(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.runs[name]
}

// Injected is how many executions of the named activity had their result replaced by
// FailAfterCommit or dropped by OnceAfter (counted once the hook returned, so polling it is a
// way to wait for the hook).
func (f *ActivityFaults) Injected(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.injected[name]
}

// InterceptActivity implements interceptor.WorkerInterceptor.
func (f *ActivityFaults) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &faultyActivity{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, f: f}
}

type faultyActivity struct {
	interceptor.ActivityInboundInterceptorBase
	f *ActivityFaults
}

func (a *faultyActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	info := activity.GetInfo(ctx)
	name := info.ActivityType.Name
	f := a.f
	f.mu.Lock()
	if hooks := f.before[name]; len(hooks) > 0 {
		hook := hooks[0]
		f.before[name] = hooks[1:]
		f.mu.Unlock()
		hook()
	} else {
		f.mu.Unlock()
	}
	out, err := a.Next.ExecuteActivity(ctx, in)

	f.mu.Lock()
	f.runs[name]++
	if err != nil {
		f.mu.Unlock()
		return out, err
	}
	if hooks := f.after[name]; len(hooks) > 0 {
		hook := hooks[0]
		f.after[name] = hooks[1:]
		f.mu.Unlock()
		hook()
		if info.IsLocalActivity {
			return out, nil
		}
		f.mu.Lock()
		f.injected[name]++ // after the hook, so a test seeing the count sees the hook's effects
		f.mu.Unlock()
		return nil, activity.ErrResultPending // the SDK reports nothing for this execution
	}
	if f.failAfter[name] > 0 {
		f.failAfter[name]--
		f.injected[name]++
		f.mu.Unlock()
		return nil, temporal.NewApplicationError("wftest: injected failure after "+name+" committed", InjectedFailureType)
	}
	f.mu.Unlock()
	return out, nil
}

// ActivityName is the name a worker registers the activity function fn under by default: the
// function's name, or for a method value (acts.ApplyTaskChange, or a typed nil's
// (*activities.Activities)(nil).ApplyTaskChange) the method's name, which is also the name
// RegisterActivity gives each method of a struct. It mirrors the SDK's own naming.
func ActivityName(fn any) string {
	full := runtime.FuncForPC(reflect.ValueOf(fn).Pointer()).Name()
	name := full[strings.LastIndex(full, ".")+1:]
	return strings.TrimSuffix(name, "-fm")
}
