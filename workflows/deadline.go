package workflows

import (
	"context"
	"time"

	"go.temporal.io/sdk/interceptor"
)

// transactionBudget is the part of an activity's time (its start-to-close timeout, or what is
// left of its schedule-to-close one) that its work, database transactions included, may use.
// A write activity gets 20 of its 30 seconds (persist): a database that has not answered by then
// has the statement canceled and the transaction rolled back (pgx cancels it on PostgreSQL,
// SQLite interrupts it), and the attempt fails and is retried. Without it the transaction could
// still be running, holding its locks, when the server times the attempt out and starts the next
// one (docs/write-path.md, "One write protocol").
const transactionBudget = 2.0 / 3

// activityDeadline is the worker interceptor that ends every activity's context at
// transactionBudget of its time.
type activityDeadline struct {
	interceptor.WorkerInterceptorBase
}

func (*activityDeadline) InterceptActivity(ctx context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &deadlineActivity{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}}
}

type deadlineActivity struct {
	interceptor.ActivityInboundInterceptorBase
}

func (a *deadlineActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	if d, ok := ctx.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(float64(time.Until(d))*transactionBudget))
		defer cancel()
	}
	return a.Next.ExecuteActivity(ctx, in)
}
