// helloworld.Pool, the service of belier's gRPC capacity test: its one method, Serve, is
// answered by -pool-workers handlers (a call waits for a free one), each holding the call for
// -pool-service before it answers. Its capacity is therefore workers / service time calls a
// second, which a capacity search must find. The server measures the time each call held a
// handler (a sleep overshoots by the timer's slack), so the test compares the search's answer
// with the capacity the server really had. Its messages are StringValue's, as the Greeter's.
package main

import (
	"context"
	"flag"
	"fmt"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

var (
	poolWorkers = flag.Int("pool-workers", 4, "helloworld.Pool/Serve: how many calls are served at once")
	poolService = flag.Duration("pool-service", 20*time.Millisecond, "helloworld.Pool/Serve: how long each call holds its handler")
)

// Calls served, and the nanoseconds they held a handler in all.
var pooled, pooledNanos atomic.Int64

var poolDesc = grpc.ServiceDesc{
	ServiceName: "helloworld.Pool",
	HandlerType: (*greeter)(nil),
	Methods:     []grpc.MethodDesc{unary("Serve", servePooled)},
}

// handlers holds a token per free handler; made in main once the flags are read.
var handlers chan struct{}

func startPool() {
	handlers = make(chan struct{}, *poolWorkers)
	for i := 0; i < *poolWorkers; i++ {
		handlers <- struct{}{}
	}
}

func servePooled(ctx context.Context, in *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
	select {
	case <-handlers:
	case <-ctx.Done():
		// A call whose deadline passed while it waited for a handler: DEADLINE_EXCEEDED (or
		// CANCELLED), as Slow answers, not UNKNOWN.
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	start := time.Now()
	time.Sleep(*poolService)
	pooledNanos.Add(int64(time.Since(start)))
	pooled.Add(1)
	handlers <- struct{}{}
	return wrapperspb.String("Served " + in.GetValue()), nil
}

func poolCounts() string {
	return fmt.Sprintf("Pooled=%d PooledNanos=%d", pooled.Load(), pooledNanos.Load())
}
