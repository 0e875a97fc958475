// An HTTP/3 server on quic-go for belier's HTTP/3 tests. It listens on a UDP port of
// 127.0.0.1 with a certificate it makes at start (its CA written to the file given by -ca),
// prints "listening PORT" once it serves, counts on its own side, and prints
// "counts Requests=N H3=N Conns=N Early=N" when its standard input closes, then on a second
// line its connections by peer address ("peers 127.0.0.2=3 127.0.0.3=3", in address order),
// then exits.
//
//	-idle 200ms    closes a connection idle that long (QUIC's idle timeout)
//	-0rtt          accepts 0-RTT early data (its session tickets allow it); Early counts the
//	               connections whose handshake used it
//	-goaway N      sends each connection a GOAWAY once it served N requests (serving those
//	               in flight, rejecting any above the GOAWAY's id), then closes it
//
// Paths: /delay?d=5ms answers after the delay; any other path answers "ok\n" (200).
package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

var requests, h3, conns, early atomic.Int64

// peers counts connections by the peer's IP address.
var peers = struct {
	sync.Mutex
	by map[string]int64
}{by: map[string]int64{}}

func peerLine() string {
	peers.Lock()
	defer peers.Unlock()
	fields := make([]string, 0, len(peers.by))
	for ip, n := range peers.by {
		fields = append(fields, fmt.Sprintf("%s=%d", ip, n))
	}
	sort.Strings(fields)
	return strings.TrimSpace("peers " + strings.Join(fields, " "))
}

func certificate(caPath string) tls.Certificate {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	template := x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "localhost"},
		DNSNames:              []string{"localhost"},
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, &template, &template, &key.PublicKey, key)
	if err != nil {
		panic(err)
	}
	if caPath != "" {
		pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		if err := os.WriteFile(caPath, pemBytes, 0o644); err != nil {
			panic(err)
		}
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}
}

func main() {
	idle := flag.Duration("idle", 30*time.Second, "QUIC idle timeout")
	goaway := flag.Int64("goaway", 0, "send each connection a GOAWAY after this many requests (0: never)")
	caPath := flag.String("ca", "", "where to write the CA certificate (PEM)")
	allow0RTT := flag.Bool("0rtt", false, "accept 0-RTT early data")
	flag.Parse()

	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.ProtoMajor == 3 {
			h3.Add(1)
		}
		if d, err := time.ParseDuration(r.URL.Query().Get("d")); err == nil && r.URL.Path == "/delay" {
			time.Sleep(d)
		}
		io.WriteString(w, "ok\n")
	})
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		panic(err)
	}
	tlsConf := http3.ConfigureTLSConfig(&tls.Config{Certificates: []tls.Certificate{certificate(*caPath)}})
	quicConf := &quic.Config{MaxIdleTimeout: *idle, MaxIncomingStreams: 1000, Allow0RTT: *allow0RTT}
	listener, err := quic.ListenEarly(udp, tlsConf, quicConf)
	if err != nil {
		panic(err)
	}
	go accept(listener, handler, *goaway)
	fmt.Printf("listening %d\n", udp.LocalAddr().(*net.UDPAddr).Port)
	io.Copy(io.Discard, bufio.NewReader(os.Stdin))
	fmt.Printf("counts Requests=%d H3=%d Conns=%d Early=%d\n", requests.Load(), h3.Load(), conns.Load(), early.Load())
	fmt.Println(peerLine())
}

// accept serves each connection with an HTTP/3 server of its own, so that a GOAWAY goes to
// that connection alone.
func accept(listener *quic.EarlyListener, handler http.Handler, goaway int64) {
	for {
		conn, err := listener.Accept(context.Background())
		if err != nil {
			return
		}
		conns.Add(1)
		go func() {
			<-conn.HandshakeComplete()
			if conn.ConnectionState().Used0RTT {
				early.Add(1)
			}
		}()
		if addr, ok := conn.RemoteAddr().(*net.UDPAddr); ok {
			peers.Lock()
			peers.by[addr.IP.String()]++
			peers.Unlock()
		}
		server := &http3.Server{}
		var served atomic.Int64
		server.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			handler.ServeHTTP(w, r)
			if goaway > 0 && served.Add(1) == goaway {
				go server.Shutdown(context.Background())
			}
		})
		go server.ServeQUICConn(conn)
	}
}
