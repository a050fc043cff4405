// franztxn: a franz-go (kgo) transactional producer driven by commands, the
// protocol of the Java TxnProducer in tests/integration/test_txn_commit.py.
//
//	franztxn BOOTSTRAP TRANSACTIONAL_ID TOPIC [KEY=VALUE...]
//
// Options: commit_timeout_ms (the context deadline of a commit or abort,
// default 60000; 0: none — franz-go retries CONCURRENT_TRANSACTIONS until the
// context ends), request_timeout_ms (default 30000).
// stdin, one command a line: "init", "begin", "send N [P]" (N records to
// partition P, default 0, each acknowledged before the answer), "commit [MS]",
// "abort [MS]" (MS: this call's deadline instead of commit_timeout_ms), "quit". stdout, one answer a command: "INIT", "BEGUN",
// "SENT first,last ms=..", "COMMITTED ms=..", "ABORTED ms=..", or
// "ERROR <error> ms=.." (the Kafka error code and retriability when it has one).
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"syncgate/tests/clients/go/proto"
)

func describe(err error) string {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return fmt.Sprintf("code=%d name=%s retriable=%v %s", ke.Code, ke.Message, ke.Retriable, err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "context.DeadlineExceeded " + err.Error()
	}
	return strings.ReplaceAll(err.Error(), "\n", " ")
}

func main() {
	if len(os.Args) < 4 {
		fmt.Fprintln(os.Stderr, "usage: franztxn BOOTSTRAP TRANSACTIONAL_ID TOPIC [KEY=VALUE...]")
		os.Exit(2)
	}
	a := proto.Args{Bootstrap: os.Args[1], Topic: os.Args[3], Opts: map[string]string{}}
	for _, kv := range os.Args[4:] {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			fmt.Fprintln(os.Stderr, "bad option", kv)
			os.Exit(2)
		}
		a.Opts[k] = v
	}
	endTimeout := time.Duration(a.Int("commit_timeout_ms", 60000)) * time.Millisecond
	cl, err := kgo.NewClient(
		kgo.SeedBrokers(a.Bootstrap),
		kgo.TransactionalID(os.Args[2]),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerLinger(0),
		kgo.RequestTimeoutOverhead(time.Duration(a.Int("request_timeout_ms", 30000))*time.Millisecond),
	)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer cl.Close()
	k := 0
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if f[0] == "quit" {
			break
		}
		t0 := time.Now()
		ms := func() int64 { return time.Since(t0).Milliseconds() }
		var answer string
		switch f[0] {
		case "init":
			// kgo initializes the producer id with the first produce; ask now
			// so that "init" means what it means for Java
			_, _, err = cl.ProducerID(context.Background())
			answer = "INIT"
		case "begin":
			err = cl.BeginTransaction()
			answer = "BEGUN"
		case "send":
			n, _ := strconv.Atoi(f[1])
			part := 0
			if len(f) > 2 {
				part, _ = strconv.Atoi(f[2])
			}
			rs := make([]*kgo.Record, n)
			for i := range rs {
				rs[i] = &kgo.Record{Topic: a.Topic, Partition: int32(part), Key: []byte(fmt.Sprintf("k%d", k)),
					Value: []byte(fmt.Sprintf("v%d", k))}
				k++
			}
			res := cl.ProduceSync(context.Background(), rs...)
			err = res.FirstErr()
			if err == nil {
				answer = fmt.Sprintf("SENT %d,%d ms=%d", res[0].Record.Offset, res[len(res)-1].Record.Offset, ms())
			}
		case "commit", "abort":
			try, word := kgo.TryCommit, "COMMITTED"
			if f[0] == "abort" {
				try, word = kgo.TryAbort, "ABORTED"
			}
			d := endTimeout
			if len(f) > 1 {
				n, _ := strconv.Atoi(f[1])
				d = time.Duration(n) * time.Millisecond
			}
			ctx, cancel := context.Background(), context.CancelFunc(func() {})
			if d > 0 {
				ctx, cancel = context.WithTimeout(ctx, d)
			}
			if err = cl.Flush(ctx); err == nil {
				err = cl.EndTransaction(ctx, try)
			}
			cancel()
			answer = fmt.Sprintf("%s ms=%d", word, ms())
		default:
			fmt.Fprintln(os.Stderr, "bad line", sc.Text())
			os.Exit(2)
		}
		if err != nil {
			answer = fmt.Sprintf("ERROR %s ms=%d", describe(err), ms())
		}
		fmt.Println(answer)
	}
}
