// saramaprod: IBM/sarama async producer speaking the tests/clients protocol.
// Options: idempotent=0|1 request_timeout_ms retries version (e.g. 0.11.0.0,
// 2.1.0; default: sarama's default protocol version).
package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/IBM/sarama"
	"syncgate/tests/clients/go/proto"
)

func main() {
	a := proto.Parse()
	c := sarama.NewConfig()
	if v := a.Str("version", ""); v != "" {
		kv, err := sarama.ParseKafkaVersion(v)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(2)
		}
		c.Version = kv
	}
	rt := time.Duration(a.Int("request_timeout_ms", 3000)) * time.Millisecond
	c.ClientID = "sarama"
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Timeout = rt
	c.Net.ReadTimeout = rt + time.Second
	c.Producer.Partitioner = sarama.NewManualPartitioner
	c.Producer.Return.Successes = true
	c.Producer.Return.Errors = true
	c.Producer.Retry.Max = a.Int("retries", 1000)
	c.Producer.Retry.Backoff = 100 * time.Millisecond
	c.Producer.Flush.Frequency = 5 * time.Millisecond
	if a.Int("idempotent", 1) == 1 {
		c.Producer.Idempotent = true
		c.Net.MaxOpenRequests = 1
	}
	p, err := sarama.NewAsyncProducer([]string{a.Bootstrap}, c)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var out proto.Out
	done := make(chan struct{})
	go func() {
		for m := range p.Successes() {
			out.Ack(m.Partition, m.Offset, m.Metadata.(string))
		}
		done <- struct{}{}
	}()
	go func() {
		for e := range p.Errors() {
			desc := e.Err.Error()
			var ke sarama.KError
			if errors.As(e.Err, &ke) {
				desc = fmt.Sprintf("code=%d %s", int16(ke), ke.Error())
			}
			out.Err(e.Msg.Partition, e.Msg.Metadata.(string), desc)
		}
		done <- struct{}{}
	}()
	out.Run(func(part int32, v string) {
		p.Input() <- &sarama.ProducerMessage{Topic: a.Topic, Partition: part,
			Value: sarama.StringEncoder(v), Metadata: v}
	})
	p.AsyncClose()
	<-done
	<-done
	out.Line("DONE")
}
