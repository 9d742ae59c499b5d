// SPDX-License-Identifier: MIT
//
// An ampd client in Go on Debian's grpc-go (golang-google-grpc-dev), built
// in GOPATH mode against /usr/share/gocode (no module proxy):
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go run examples/go/main.go unix:/run/ampd/ampd.sock
//
// It runs every job kind (Reverse, Transform, Histogram, Fill, Pipeline),
// a Stream, many calls at once from goroutines, a call that outlives its
// deadline and one cancelled, and a Reverse whose input and output are a
// shared-memory region registered over SCM_RIGHTS (docs/regions.md),
// checking each result against a computation here; it exits 1 at the
// first difference. For tls:HOST:PORT, $AMP_TLS_CA names the CA file that
// signed the daemon's certificate and $AMP_TOKEN the bearer token every
// call sends (ampd wants one on TCP). Messages
// are encoded with protowire, field by field from proto/amp.proto, so the
// example needs no generated code: a program of your own would generate
// it with protoc --go_out from /usr/share/ampd/proto (go_package is set).
package main

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
)

const (
	service    = "/amp.v1.Amp/"
	callTime   = 60 * time.Second
	streamLen  = 3 << 20
	chunkLen   = 256 << 10
	regionLen  = 1 << 20
	opXor      = 2 // TRANSFORM_OP_XOR
	typeInt32  = 3 // ELEMENT_TYPE_INT32
	histBins   = 16
	fillCount  = 5000
	codecName  = "proto" // replaces grpc-go's codec: messages go as bytes
	regionsExt = ".regions"
	inFlight   = 64                     // calls at once from goroutines
	shortTime  = 300 * time.Millisecond // a deadline the call outlives
)

// rawCodec sends and receives already-encoded protobuf bytes.
type rawCodec struct{}

func (rawCodec) Marshal(v interface{}) ([]byte, error) { return *(v.(*[]byte)), nil }
func (rawCodec) Unmarshal(b []byte, v interface{}) error {
	*(v.(*[]byte)) = append([]byte(nil), b...)
	return nil
}
func (rawCodec) Name() string { return codecName }

func bytesField(num protowire.Number, v []byte) []byte {
	b := protowire.AppendTag(nil, num, protowire.BytesType)
	return protowire.AppendBytes(b, v)
}

func uintField(num protowire.Number, v uint64) []byte {
	b := protowire.AppendTag(nil, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func doubleField(num protowire.Number, v float64) []byte {
	b := protowire.AppendTag(nil, num, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, math.Float64bits(v))
}

func cat(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

// fields returns the values of one message's fields by number (bytes
// fields as bytes, varints as their value's 8 little-endian bytes).
func fields(b []byte) map[protowire.Number][][]byte {
	out := map[protowire.Number][][]byte{}
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		must(n >= 0, "bad tag")
		b = b[n:]
		var v []byte
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			var x uint64
			x, n = protowire.ConsumeVarint(b)
			v = binary.LittleEndian.AppendUint64(nil, x)
		default:
			n = protowire.ConsumeFieldValue(num, typ, b)
		}
		must(n >= 0, "bad field")
		b = b[n:]
		out[num] = append(out[num], v)
	}
	return out
}

func first(m map[protowire.Number][][]byte, num protowire.Number) []byte {
	if len(m[num]) == 0 {
		return nil
	}
	return m[num][0]
}

func must(ok bool, what string) {
	if !ok {
		fmt.Fprintln(os.Stderr, "FAIL", what)
		os.Exit(1)
	}
}

func dataOf(n, seed int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*131 + seed*17 + (i >> 8))
	}
	return b
}

func reversed(b []byte) []byte {
	out := make([]byte, len(b))
	for i := range b {
		out[len(b)-1-i] = b[i]
	}
	return out
}

func xored(b []byte, v byte) []byte {
	out := make([]byte, len(b))
	for i := range b {
		out[i] = b[i] ^ v
	}
	return out
}

func unary(conn *grpc.ClientConn, method string, req []byte) []byte {
	ctx, cancel := context.WithTimeout(context.Background(), callTime)
	defer cancel()
	var reply []byte
	err := conn.Invoke(ctx, service+method, &req, &reply)
	must(err == nil, fmt.Sprintf("%s: %v", method, err))
	return reply
}

func xorParams(v uint64) []byte { return cat(uintField(1, opXor), uintField(2, v)) }

func jobs(conn *grpc.ClientConn) {
	for _, n := range []int{0, 1, 1000, 100003} {
		d := dataOf(n, n+1)
		r := fields(unary(conn, "Reverse", bytesField(1, d)))
		must(bytes.Equal(first(r, 1), reversed(d)), fmt.Sprintf("reverse of %d bytes", n))
	}
	d := dataOf(200003, 3)
	r := fields(unary(conn, "Transform", cat(bytesField(1, d), bytesField(2, xorParams(0x5a)))))
	must(bytes.Equal(first(r, 1), xored(d, 0x5a)), "transform xor")

	values := make([]byte, 4*histBins*3)
	for i := 0; i < histBins*3; i++ {
		binary.LittleEndian.PutUint32(values[4*i:], uint32(i%histBins))
	}
	hp := cat(uintField(1, typeInt32), uintField(2, histBins), doubleField(4, histBins))
	h := fields(first(fields(unary(conn, "Histogram", cat(bytesField(1, values), bytesField(2, hp)))), 1))
	counts := first(h, 1)
	for len(counts) > 0 {
		c, n := protowire.ConsumeVarint(counts)
		must(n > 0 && c == 3, "histogram count")
		counts = counts[n:]
	}
	must(len(h[1]) == 1, "histogram counts present")

	fp := cat(uintField(1, typeInt32), uintField(2, fillCount), uintField(4, 3), uintField(5, 2))
	f := fields(unary(conn, "Fill", bytesField(1, fp)))
	want := make([]byte, 4*fillCount)
	for k := 0; k < fillCount; k++ {
		binary.LittleEndian.PutUint32(want[4*k:], uint32(3+2*k))
	}
	must(bytes.Equal(first(f, 1), want), "fill int32")

	steps := cat(bytesField(2, bytesField(2, xorParams(1))), bytesField(2, bytesField(1, nil)))
	p := fields(unary(conn, "Pipeline", cat(bytesField(1, d), steps)))
	must(len(p[1]) == 2, "pipeline: a result per step")
	must(bytes.Equal(first(fields(p[1][1]), 1), reversed(xored(d, 1))), "pipeline xor then reverse")
}

func stream(conn *grpc.ClientConn) {
	ctx, cancel := context.WithTimeout(context.Background(), callTime)
	defer cancel()
	desc := &grpc.StreamDesc{StreamName: "Stream", ClientStreams: true, ServerStreams: true}
	s, err := conn.NewStream(ctx, desc, service+"Stream")
	must(err == nil, fmt.Sprintf("Stream: %v", err))
	d := dataOf(streamLen, 7)
	header := cat(bytesField(1, bytesField(2, xorParams(0x33))), uintField(3, uint64(len(d))))
	go func() { // replies are read while requests go out: flow control both ways
		msg := bytesField(1, header)
		must(s.SendMsg(&msg) == nil, "stream header")
		for i := 0; i < len(d); i += chunkLen {
			end := i + chunkLen
			if end > len(d) {
				end = len(d)
			}
			msg := bytesField(2, d[i:end])
			must(s.SendMsg(&msg) == nil, "stream data")
		}
		must(s.CloseSend() == nil, "stream close")
	}()
	var out []byte
	for {
		var reply []byte
		if err := s.RecvMsg(&reply); err != nil {
			must(err.Error() == "EOF", fmt.Sprintf("stream: %v", err))
			break
		}
		out = append(out, first(fields(reply), 1)...)
	}
	must(bytes.Equal(out, xored(d, 0x33)), fmt.Sprintf("stream of %d bytes", streamLen))
}

// many runs inFlight Reverse calls at once, one goroutine each, on the
// one connection: grpc-go's way to keep calls in flight.
func many(conn *grpc.ClientConn) {
	errs := make(chan string, inFlight)
	for i := 0; i < inFlight; i++ {
		go func(i int) {
			ctx, cancel := context.WithTimeout(context.Background(), callTime)
			defer cancel()
			d := dataOf(4096+i, i)
			req, reply := bytesField(1, d), []byte(nil)
			if err := conn.Invoke(ctx, service+"Reverse", &req, &reply); err != nil {
				errs <- fmt.Sprintf("call %d: %v", i, err)
			} else if !bytes.Equal(first(fields(reply), 1), reversed(d)) {
				errs <- fmt.Sprintf("call %d: wrong reply", i)
			} else {
				errs <- ""
			}
		}(i)
	}
	for i := 0; i < inFlight; i++ {
		e := <-errs
		must(e == "", e)
	}
}

// openStream starts a Stream job (xor) whose input never ends: the daemon
// waits for it until the call's deadline passes or the client cancels.
func openStream(ctx context.Context, conn *grpc.ClientConn) grpc.ClientStream {
	desc := &grpc.StreamDesc{StreamName: "Stream", ClientStreams: true, ServerStreams: true}
	s, err := conn.NewStream(ctx, desc, service+"Stream")
	must(err == nil, fmt.Sprintf("Stream: %v", err))
	msg := bytesField(1, bytesField(1, bytesField(2, xorParams(1))))
	must(s.SendMsg(&msg) == nil, "stream header")
	return s
}

// tooLarge: a reply over grpc-go's default 4 MiB receive limit is refused
// before any device work, with a status saying what to do instead
// (amp-max-reply-bytes, a Stream or a region), not thrown away here.
func tooLarge(conn *grpc.ClientConn) {
	ctx, cancel := context.WithTimeout(context.Background(), callTime)
	defer cancel()
	req, reply := bytesField(1, make([]byte, 5<<20)), []byte(nil)
	err := conn.Invoke(ctx, service+"Reverse", &req, &reply)
	st := status.Convert(err)
	must(st.Code() == codes.ResourceExhausted && strings.Contains(st.Message(), "amp-max-reply-bytes"),
		fmt.Sprintf("a 5 MiB reply: %v", err))
}

// deadlineAndCancel: a call past its deadline ends DEADLINE_EXCEEDED, a
// cancelled one CANCELLED, and the connection serves on.
func deadlineAndCancel(conn *grpc.ClientConn) {
	ctx, cancel := context.WithTimeout(context.Background(), shortTime)
	defer cancel()
	var reply []byte
	err := openStream(ctx, conn).RecvMsg(&reply)
	must(status.Code(err) == codes.DeadlineExceeded, fmt.Sprintf("past its deadline: %v", err))

	ctx, cancel = context.WithCancel(context.Background())
	s := openStream(ctx, conn)
	time.AfterFunc(shortTime, cancel)
	err = s.RecvMsg(&reply)
	must(status.Code(err) == codes.Canceled, fmt.Sprintf("cancelled: %v", err))
	d := dataOf(10, 1)
	r := fields(unary(conn, "Reverse", bytesField(1, d)))
	must(bytes.Equal(first(r, 1), reversed(d)), "a call after them")
}

// tokenAuth sends the bearer token with every call (over TLS only, as
// grpc-go requires of per-call credentials).
type tokenAuth string

func (t tokenAuth) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(t)}, nil
}
func (tokenAuth) RequireTransportSecurity() bool { return true }

// dialOptions: how to reach address (unix:PATH, HOST:PORT or tls:HOST:PORT).
func dialOptions(address string) (string, []grpc.DialOption) {
	switch {
	case strings.HasPrefix(address, "unix:"): // Debian's grpc-go 1.33 has no unix: resolver
		path := strings.TrimPrefix(address, "unix:")
		return "passthrough:///" + path, []grpc.DialOption{grpc.WithInsecure(),
			grpc.WithAuthority("localhost"), grpc.WithContextDialer(func(ctx context.Context, _ string) (net.Conn, error) {
				return (&net.Dialer{}).DialContext(ctx, "unix", path)
			})}
	case strings.HasPrefix(address, "tls:"):
		creds, err := credentials.NewClientTLSFromFile(os.Getenv("AMP_TLS_CA"), "")
		must(err == nil, fmt.Sprintf("$AMP_TLS_CA: %v", err))
		return strings.TrimPrefix(address, "tls:"), []grpc.DialOption{grpc.WithTransportCredentials(creds),
			grpc.WithPerRPCCredentials(tokenAuth(os.Getenv("AMP_TOKEN")))}
	}
	return address, []grpc.DialOption{grpc.WithInsecure()}
}

// register shares a sealed memfd with the daemon; returns its id and the
// region-socket connection, which must stay open while the region is used.
func register(sockPath string, fd int) (uint64, *net.UnixConn) {
	c, err := net.DialUnix("unix", nil, &net.UnixAddr{Name: sockPath + regionsExt, Net: "unix"})
	must(err == nil, fmt.Sprintf("region socket: %v", err))
	_, _, err = c.WriteMsgUnix([]byte("REGISTER\n"), unix.UnixRights(fd), nil)
	must(err == nil, fmt.Sprintf("REGISTER: %v", err))
	line := make([]byte, 0, 128)
	buf := make([]byte, 1)
	for len(line) == 0 || line[len(line)-1] != '\n' {
		n, err := c.Read(buf)
		must(err == nil && n == 1, "region socket answer")
		line = append(line, buf[0])
	}
	words := strings.Fields(string(line))
	must(len(words) == 3 && words[0] == "OK", "REGISTER answered "+string(line))
	id, err := strconv.ParseUint(words[1], 10, 64)
	must(err == nil, "region id")
	return id, c
}

func region(conn *grpc.ClientConn, sockPath string) {
	fd, err := unix.MemfdCreate("ampd-go-example", unix.MFD_CLOEXEC|unix.MFD_ALLOW_SEALING)
	must(err == nil, fmt.Sprintf("memfd_create: %v", err))
	defer unix.Close(fd)
	must(unix.Ftruncate(fd, regionLen) == nil, "ftruncate")
	_, err = unix.FcntlInt(uintptr(fd), unix.F_ADD_SEALS, unix.F_SEAL_SHRINK|unix.F_SEAL_GROW)
	must(err == nil, fmt.Sprintf("seals: %v", err))
	mem, err := unix.Mmap(fd, 0, regionLen, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	must(err == nil, fmt.Sprintf("mmap: %v", err))
	defer unix.Munmap(mem)
	half := regionLen / 2
	d := dataOf(half, 11)
	copy(mem, d) // written before REGISTER: the daemon maps what is there
	id, c := register(sockPath, fd)
	defer c.Close()
	slice := func(off, n int) []byte {
		return cat(uintField(1, id), uintField(2, uint64(off)), uintField(3, uint64(n)))
	}
	r := fields(unary(conn, "Reverse", cat(bytesField(3, slice(0, half)), bytesField(4, slice(half, half)))))
	must(len(first(r, 1)) == 0, "region reverse: no data in the reply")
	must(bytes.Equal(mem[half:], reversed(d)), "region reverse: output in the region")
}

func main() {
	must(len(os.Args) == 2, "usage: main ADDRESS (unix:PATH, HOST:PORT or tls:HOST:PORT)")
	encoding.RegisterCodec(rawCodec{})
	target, opts := dialOptions(os.Args[1])
	conn, err := grpc.Dial(target, opts...)
	must(err == nil, fmt.Sprintf("dial: %v", err))
	defer conn.Close()
	jobs(conn)
	fmt.Println("ok   reverse, transform, histogram, fill, pipeline")
	stream(conn)
	fmt.Println("ok   stream")
	many(conn)
	fmt.Printf("ok   %d calls at once\n", inFlight)
	deadlineAndCancel(conn)
	fmt.Println("ok   deadline and cancel")
	tooLarge(conn)
	fmt.Println("ok   a reply past 4 MiB refused first, saying what to do")
	if strings.HasPrefix(os.Args[1], "unix:") { // regions are for Unix-socket clients
		region(conn, strings.TrimPrefix(os.Args[1], "unix:"))
		fmt.Println("ok   region")
	}
}
