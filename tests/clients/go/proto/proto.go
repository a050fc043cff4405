// Package proto is the line protocol every client program in tests/clients
// speaks (see tests/clients/README.md): arguments BOOTSTRAP TOPIC KEY=VALUE...,
// stdin "send PARTITION VALUE" / "flush", stdout "ACK PARTITION OFFSET VALUE",
// "ERR PARTITION VALUE DESCRIPTION", "FLUSHED", and "DONE" at the end.
package proto

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
)

// Args are the command line: bootstrap, topic and the KEY=VALUE options.
type Args struct {
	Bootstrap, Topic string
	Opts             map[string]string
}

// Parse reads os.Args; exits with usage on a malformed line.
func Parse() Args {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: PROG BOOTSTRAP TOPIC [KEY=VALUE...]")
		os.Exit(2)
	}
	a := Args{Bootstrap: os.Args[1], Topic: os.Args[2], Opts: map[string]string{}}
	for _, kv := range os.Args[3:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			fmt.Fprintln(os.Stderr, "bad option", kv)
			os.Exit(2)
		}
		a.Opts[k] = v
	}
	return a
}

// Int is an integer option with a default.
func (a Args) Int(k string, def int) int {
	if v, ok := a.Opts[k]; ok {
		n, err := strconv.Atoi(v)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bad integer", k, v)
			os.Exit(2)
		}
		return n
	}
	return def
}

// Str is a string option with a default.
func (a Args) Str(k, def string) string {
	if v, ok := a.Opts[k]; ok {
		return v
	}
	return def
}

// Out writes outcome lines and counts records in flight.
type Out struct {
	mu      sync.Mutex
	pending sync.WaitGroup
}

// Sent marks one record in flight.
func (o *Out) Sent() { o.pending.Add(1) }

// Ack reports a success.
func (o *Out) Ack(partition int32, offset int64, value string) {
	o.mu.Lock()
	fmt.Printf("ACK %d %d %s\n", partition, offset, value)
	o.mu.Unlock()
	o.pending.Done()
}

// Err reports a final failure.
func (o *Out) Err(partition int32, value string, desc string) {
	o.mu.Lock()
	fmt.Printf("ERR %d %s %s\n", partition, value, strings.ReplaceAll(desc, "\n", " "))
	o.mu.Unlock()
	o.pending.Done()
}

// Line prints a protocol line.
func (o *Out) Line(s string) {
	o.mu.Lock()
	fmt.Println(s)
	o.mu.Unlock()
}

// Run reads stdin: send calls send(partition, value); flush waits for every
// record in flight and prints FLUSHED. At EOF it waits again; the caller
// closes the client and prints DONE.
func (o *Out) Run(send func(partition int32, value string)) {
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		switch {
		case len(f) == 3 && f[0] == "send":
			p, err := strconv.Atoi(f[1])
			if err != nil {
				fmt.Fprintln(os.Stderr, "bad partition", f[1])
				os.Exit(2)
			}
			o.Sent()
			send(int32(p), f[2])
		case len(f) == 1 && f[0] == "flush":
			o.pending.Wait()
			o.Line("FLUSHED")
		case len(f) == 0:
		default:
			fmt.Fprintln(os.Stderr, "bad line", sc.Text())
			os.Exit(2)
		}
	}
	o.pending.Wait()
}
