// A grpc-go server for belier's gRPC tests: helloworld.Greeter with SayHello (OK), Limited
// (RESOURCE_EXHAUSTED for every 10th call) and Slow (answers after 2 s, or when the call's
// deadline passes), the streaming helloworld.Streamer (streamer.go) and helloworld.Pool, a
// method behind a set number of handlers (pool.go). Messages are
// google.protobuf.StringValue, wire-compatible with HelloRequest{string name = 1} and
// HelloReply{string message = 1}, so no generated code is needed. It prints "listening PORT"
// once it listens on 127.0.0.1, counts calls (and streamed messages) on its own side, and
// prints "calls SayHello=N Limited=N Slow=N ServerStream=N …" when its standard input closes,
// then exits. Its flags (reflection, TLS, a maximum connection age) are in options.go.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

var sayHello, limited, slow atomic.Int64

type greeter interface{}

func unary(name string, serve func(context.Context, *wrapperspb.StringValue) (*wrapperspb.StringValue, error)) grpc.MethodDesc {
	return grpc.MethodDesc{
		MethodName: name,
		Handler: func(_ interface{}, ctx context.Context, dec func(interface{}) error, _ grpc.UnaryServerInterceptor) (interface{}, error) {
			in := new(wrapperspb.StringValue)
			if err := dec(in); err != nil {
				return nil, err
			}
			return serve(ctx, in)
		},
	}
}

func main() {
	desc := grpc.ServiceDesc{
		ServiceName: "helloworld.Greeter",
		HandlerType: (*greeter)(nil),
		Methods: []grpc.MethodDesc{
			unary("SayHello", func(_ context.Context, in *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
				sayHello.Add(1)
				return wrapperspb.String("Hello " + in.GetValue()), nil
			}),
			unary("Limited", func(_ context.Context, in *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
				if limited.Add(1)%10 == 0 {
					return nil, status.Error(codes.ResourceExhausted, "every 10th call: quota used")
				}
				return wrapperspb.String("Hello " + in.GetValue()), nil
			}),
			unary("Slow", func(ctx context.Context, in *wrapperspb.StringValue) (*wrapperspb.StringValue, error) {
				slow.Add(1)
				select {
				case <-time.After(2 * time.Second):
					return wrapperspb.String("Hello " + in.GetValue()), nil
				case <-ctx.Done():
					return nil, status.FromContextError(ctx.Err()).Err()
				}
			}),
		},
	}
	flag.Parse()
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	options, err := serverOptions()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	server := grpc.NewServer(options...)
	server.RegisterService(&desc, struct{}{})
	server.RegisterService(&streamerDesc, struct{}{})
	startPool()
	server.RegisterService(&poolDesc, struct{}{})
	if err := registerReflection(server); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	go func() { _ = server.Serve(listener) }()
	fmt.Printf("listening %d\n", listener.Addr().(*net.TCPAddr).Port)
	_, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin))
	fmt.Printf("calls SayHello=%d Limited=%d Slow=%d %s %s\n", sayHello.Load(), limited.Load(), slow.Load(), streamerCounts(), poolCounts())
	server.Stop()
}
