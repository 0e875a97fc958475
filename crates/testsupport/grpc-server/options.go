// The server's optional behaviour, each behind a flag so that a test asks for what it needs
// and the default server stays as main.go describes it: reflection (with the Greeter's real
// descriptors), TLS, and a maximum connection age (grpc-go then closes each connection with
// GOAWAY).
package main

import (
	"flag"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/keepalive"
	"google.golang.org/grpc/reflection"
	v1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoregistry"
	"google.golang.org/protobuf/types/descriptorpb"
)

var (
	withReflection = flag.Bool("reflection", false, "serve grpc.reflection.v1 and v1alpha, with the Greeter's descriptors")
	v1alphaOnly    = flag.Bool("reflection-v1alpha-only", false, "with -reflection: serve v1alpha alone, as servers before grpc-go 1.45 did")
	tlsCert        = flag.String("tls-cert", "", "serve TLS with this PEM certificate chain (with -tls-key)")
	tlsKey         = flag.String("tls-key", "", "the PEM private key of -tls-cert")
	maxAge         = flag.Duration("max-connection-age", 0, "close each connection with GOAWAY after about this long (grpc-go adds ±10% jitter)")
	maxAgeGrace    = flag.Duration("max-connection-age-grace", 0, "after GOAWAY, how long calls in flight may still finish")
)

// serverOptions are the grpc.ServerOptions the flags ask for.
func serverOptions() ([]grpc.ServerOption, error) {
	var options []grpc.ServerOption
	if *tlsCert != "" {
		creds, err := credentials.NewServerTLSFromFile(*tlsCert, *tlsKey)
		if err != nil {
			return nil, fmt.Errorf("-tls-cert/-tls-key: %w", err)
		}
		options = append(options, grpc.Creds(creds))
	}
	if *maxAge > 0 {
		options = append(options, grpc.KeepaliveParams(keepalive.ServerParameters{
			MaxConnectionAge:      *maxAge,
			MaxConnectionAgeGrace: *maxAgeGrace,
		}))
	}
	return options, nil
}

// registerReflection serves reflection when -reflection asks for it. The Greeter's handlers
// read and write StringValue (wire-compatible), so its real descriptors, the ones a client
// reflects, are registered here by hand: helloworld.proto as GREETER_PROTO in
// crates/testsupport/src/grpc.rs declares it.
func registerReflection(server *grpc.Server) error {
	if !*withReflection {
		return nil
	}
	file, err := protodesc.NewFile(greeterFile(), protoregistry.GlobalFiles)
	if err != nil {
		return err
	}
	if err := protoregistry.GlobalFiles.RegisterFile(file); err != nil {
		return err
	}
	if *v1alphaOnly {
		v1alpha.RegisterServerReflectionServer(server, reflection.NewServer(reflection.ServerOptions{Services: server}))
	} else {
		reflection.Register(server)
	}
	return nil
}

// greeterFile is helloworld.proto: HelloRequest{string name = 1}, HelloReply{string message =
// 1} and the Greeter's three unary methods.
func greeterFile() *descriptorpb.FileDescriptorProto {
	message := func(name, field string) *descriptorpb.DescriptorProto {
		return &descriptorpb.DescriptorProto{
			Name: proto.String(name),
			Field: []*descriptorpb.FieldDescriptorProto{{
				Name:     proto.String(field),
				JsonName: proto.String(field),
				Number:   proto.Int32(1),
				Type:     descriptorpb.FieldDescriptorProto_TYPE_STRING.Enum(),
				Label:    descriptorpb.FieldDescriptorProto_LABEL_OPTIONAL.Enum(),
			}},
		}
	}
	method := func(name string) *descriptorpb.MethodDescriptorProto {
		return &descriptorpb.MethodDescriptorProto{
			Name:       proto.String(name),
			InputType:  proto.String(".helloworld.HelloRequest"),
			OutputType: proto.String(".helloworld.HelloReply"),
		}
	}
	return &descriptorpb.FileDescriptorProto{
		Name:    proto.String("helloworld.proto"),
		Package: proto.String("helloworld"),
		Syntax:  proto.String("proto3"),
		MessageType: []*descriptorpb.DescriptorProto{
			message("HelloRequest", "name"),
			message("HelloReply", "message"),
		},
		Service: []*descriptorpb.ServiceDescriptorProto{{
			Name:   proto.String("Greeter"),
			Method: []*descriptorpb.MethodDescriptorProto{method("SayHello"), method("Limited"), method("Slow")},
		}},
	}
}
