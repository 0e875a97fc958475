// helloworld.Streamer, the streaming service of belier's gRPC tests, counting calls and
// messages on its own side:
//   - ServerStream sends `count` messages (100 when 0), `gap_ms` apart, for the one it reads;
//   - ClientStream reads messages until the client ends its stream, then answers one;
//   - Bidi answers each message as it reads it.
//
// Its request message StreamRequest{int64 count = 1; int32 gap_ms = 2} is read as a
// google.protobuf.Duration (seconds, nanos: the same wire format), and Note{string text = 1}
// as a StringValue, so no generated code is needed (see STREAMER_PROTO in src/grpc.rs).
package main

import (
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/wrapperspb"
)

// Calls and messages, by method: ServerStream's out, ClientStream's in, Bidi's both ways.
var serverStream, serverStreamOut, clientStream, clientStreamIn, bidi, bidiIn, bidiOut atomic.Int64

var streamerDesc = grpc.ServiceDesc{
	ServiceName: "helloworld.Streamer",
	HandlerType: (*greeter)(nil),
	Streams: []grpc.StreamDesc{
		{StreamName: "ServerStream", ServerStreams: true, Handler: serveServerStream},
		{StreamName: "ClientStream", ClientStreams: true, Handler: serveClientStream},
		{StreamName: "Bidi", ServerStreams: true, ClientStreams: true, Handler: serveBidi},
	},
}

func serveServerStream(_ interface{}, stream grpc.ServerStream) error {
	in := new(durationpb.Duration)
	if err := stream.RecvMsg(in); err != nil {
		return err
	}
	serverStream.Add(1)
	count := in.GetSeconds()
	if count == 0 {
		count = 100
	}
	gap := time.Duration(in.GetNanos()) * time.Millisecond
	for i := int64(0); i < count; i++ {
		if i > 0 && gap > 0 {
			time.Sleep(gap)
		}
		if err := stream.SendMsg(wrapperspb.String(fmt.Sprintf("message %d", i))); err != nil {
			return err
		}
		serverStreamOut.Add(1)
	}
	return nil
}

func serveClientStream(_ interface{}, stream grpc.ServerStream) error {
	clientStream.Add(1)
	read := 0
	for {
		err := stream.RecvMsg(new(wrapperspb.StringValue))
		if err == io.EOF {
			return stream.SendMsg(wrapperspb.String(fmt.Sprintf("%d messages", read)))
		}
		if err != nil {
			return err
		}
		read++
		clientStreamIn.Add(1)
	}
}

func serveBidi(_ interface{}, stream grpc.ServerStream) error {
	bidi.Add(1)
	for {
		in := new(wrapperspb.StringValue)
		err := stream.RecvMsg(in)
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		bidiIn.Add(1)
		if err := stream.SendMsg(wrapperspb.String("Hello " + in.GetValue())); err != nil {
			return err
		}
		bidiOut.Add(1)
	}
}

// The streaming counts, as fields of the "calls" line.
func streamerCounts() string {
	return fmt.Sprintf(
		"ServerStream=%d ServerStreamOut=%d ClientStream=%d ClientStreamIn=%d Bidi=%d BidiIn=%d BidiOut=%d",
		serverStream.Load(), serverStreamOut.Load(), clientStream.Load(), clientStreamIn.Load(),
		bidi.Load(), bidiIn.Load(), bidiOut.Load(),
	)
}
