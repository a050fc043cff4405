// franzprod: franz-go (kgo) producer speaking the tests/clients protocol.
// Options: idempotent=0|1 request_timeout_ms retries delivery_timeout_ms.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"syncgate/tests/clients/go/proto"
)

func main() {
	a := proto.Parse()
	rt := time.Duration(a.Int("request_timeout_ms", 3000)) * time.Millisecond
	opts := []kgo.Opt{
		kgo.SeedBrokers(a.Bootstrap),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProduceRequestTimeout(rt),
		kgo.RequestTimeoutOverhead(time.Second),
		kgo.ProducerLinger(5 * time.Millisecond),
		kgo.RecordRetries(a.Int("retries", 1000000)),
		kgo.RecordDeliveryTimeout(time.Duration(a.Int("delivery_timeout_ms", 120000)) * time.Millisecond),
	}
	if a.Int("idempotent", 1) == 0 {
		opts = append(opts, kgo.DisableIdempotentWrite())
	}
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var out proto.Out
	out.Run(func(p int32, v string) {
		r := &kgo.Record{Topic: a.Topic, Partition: p, Value: []byte(v)}
		cl.Produce(context.Background(), r, func(r *kgo.Record, err error) {
			if err != nil {
				desc := err.Error()
				var ke *kerr.Error
				if errors.As(err, &ke) {
					desc = fmt.Sprintf("code=%d retriable=%v %s", ke.Code, ke.Retriable, err)
				}
				out.Err(p, v, desc)
				return
			}
			out.Ack(r.Partition, r.Offset, v)
		})
	})
	cl.Close()
	out.Line("DONE")
}
