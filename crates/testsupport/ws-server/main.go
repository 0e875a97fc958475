// A gorilla/websocket server for belier's WebSocket tests. It prints "listening PORT" once it
// listens on 127.0.0.1, counts on its own side, and prints "counts Sockets=N In=N Out=N"
// when its standard input closes, then exits. With -deflate it agrees to permessage-deflate
// (gorilla's answer: no context takeover either way) where a client offers it, and counts
// the sockets that agreed in Deflate=N. Paths:
//
//	/echo            echoes each message (text or binary) as it came
//	/echo?delay=5ms  echoes each message after the delay (one timer per message, in order)
//	/close?after=N&code=C  echoes N messages, then closes with code C (1011 if not given);
//	                 code=0 drops the TCP connection without a close frame (1006)
//	/refuse          answers the upgrade with 403
//	/json            answers {"id": <the message's "id">} for each JSON message, the replies
//	                 of each pair of messages in reverse order (to test matching by field)
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

var sockets, in, out, deflated atomic.Int64

var upgrader = websocket.Upgrader{
	ReadBufferSize:  4096,
	WriteBufferSize: 4096,
	CheckOrigin:     func(*http.Request) bool { return true },
	Subprotocols:    []string{"chat"},
}

// upgrade upgrades the request, counting the socket and whether it agreed to compress
// (gorilla agrees to every offer of permessage-deflate when its compression is enabled).
func upgrade(w http.ResponseWriter, r *http.Request) (*websocket.Conn, error) {
	conn, err := upgrader.Upgrade(w, r, nil)
	if err != nil {
		return nil, err
	}
	sockets.Add(1)
	offered := strings.Contains(r.Header.Get("Sec-WebSocket-Extensions"), "permessage-deflate")
	if upgrader.EnableCompression && offered {
		deflated.Add(1)
	}
	return conn, nil
}

func echo(w http.ResponseWriter, r *http.Request) {
	delay, _ := time.ParseDuration(r.URL.Query().Get("delay"))
	after := -1
	if a := r.URL.Query().Get("after"); a != "" {
		after, _ = strconv.Atoi(a)
	}
	code := websocket.CloseInternalServerErr
	if c := r.URL.Query().Get("code"); c != "" {
		code, _ = strconv.Atoi(c)
	}
	conn, err := upgrade(w, r)
	if err != nil {
		return
	}
	defer conn.Close()
	for n := 0; ; n++ {
		if n == after {
			if code == 0 {
				conn.UnderlyingConn().Close()
				return
			}
			msg := websocket.FormatCloseMessage(code, "closing as asked")
			conn.WriteControl(websocket.CloseMessage, msg, time.Now().Add(time.Second))
			// Wait for the client's answering close frame.
			conn.SetReadDeadline(time.Now().Add(time.Second))
			conn.ReadMessage()
			return
		}
		kind, data, err := conn.ReadMessage()
		if err != nil {
			return
		}
		in.Add(1)
		if delay > 0 {
			time.Sleep(delay)
		}
		if err := conn.WriteMessage(kind, data); err != nil {
			return
		}
		out.Add(1)
	}
}

func swapped(w http.ResponseWriter, r *http.Request) {
	conn, err := upgrade(w, r)
	if err != nil {
		return
	}
	defer conn.Close()
	var held []byte
	for {
		kind, data, err := conn.ReadMessage()
		if err != nil {
			return
		}
		in.Add(1)
		var msg struct {
			ID json.RawMessage `json:"id"`
		}
		json.Unmarshal(data, &msg)
		reply := []byte(fmt.Sprintf(`{"id":%s,"echo":true}`, msg.ID))
		if held == nil {
			held = reply
			continue
		}
		for _, r := range [][]byte{reply, held} {
			if err := conn.WriteMessage(kind, r); err != nil {
				return
			}
			out.Add(1)
		}
		held = nil
	}
}

func main() {
	flag.BoolVar(&upgrader.EnableCompression, "deflate", false, "agree to permessage-deflate")
	flag.Parse()
	mux := http.NewServeMux()
	mux.HandleFunc("/echo", echo)
	mux.HandleFunc("/close", echo)
	mux.HandleFunc("/json", swapped)
	mux.HandleFunc("/refuse", func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "no sockets here", http.StatusForbidden)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	fmt.Printf("listening %d\n", ln.Addr().(*net.TCPAddr).Port)
	go http.Serve(ln, mux)
	io.Copy(io.Discard, bufio.NewReader(os.Stdin))
	fmt.Printf("counts Sockets=%d In=%d Out=%d Deflate=%d\n",
		sockets.Load(), in.Load(), out.Load(), deflated.Load())
}
