package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const createTopicUsage = `usage: kafkasim create-topic --topic NAME [--partitions N] [--replication-factor R] [--config NAME=VALUE ...] [--bootstrap ADDR,...]

Creates a topic on a real-mode cluster through the Kafka protocol
(CreateTopics, as any Kafka admin client sends it), for clients such as kcat
that cannot create topics themselves. Each --config is a topic config
override, as kafka-topics.sh --config gives it (min.insync.replicas=2,
unclean.leader.election.enable=true, max.message.bytes=...,
message.timestamp.type=LogAppendTime, ...); the controller refuses an
unknown name or a bad value with INVALID_CONFIG.

`

func runCreateTopic(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("create-topic")
	fs.Usage = func() { fmt.Fprint(fs.Output(), createTopicUsage); fs.PrintDefaults() }
	bootstrap := fs.String("bootstrap", DefaultBrokerListen, "comma-separated broker addresses")
	topic := fs.String("topic", "", "topic name (required)")
	partitions := fs.Int("partitions", 1, "number of partitions")
	rf := fs.Int("replication-factor", 3, "replicas per partition")
	timeout := fs.Duration("timeout", 30*time.Second, "give up after this long")
	var configs configList
	fs.Var(&configs, "config", "a topic config override NAME=VALUE (repeatable)")
	if code, ok := parseFlags(fs, args, stdout, stderr); !ok {
		return code
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "kafkasim create-topic: unexpected argument %q\n", fs.Arg(0))
		return 2
	case *topic == "":
		fmt.Fprintln(stderr, "kafkasim create-topic: --topic NAME is required")
		return 2
	case *partitions < 1 || *partitions > 1<<20:
		fmt.Fprintf(stderr, "kafkasim create-topic: --partitions %d: give 1 or more\n", *partitions)
		return 2
	case *rf < 1 || *rf > 1<<10:
		fmt.Fprintf(stderr, "kafkasim create-topic: --replication-factor %d: give 1 or more\n", *rf)
		return 2
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(strings.Split(*bootstrap, ",")...))
	if err != nil {
		fmt.Fprintf(stderr, "kafkasim create-topic: %v\n", err)
		return 2
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), *timeout)
	defer cancel()
	req := kmsg.NewPtrCreateTopicsRequest()
	req.TimeoutMillis = int32(min(*timeout, time.Minute).Milliseconds())
	rt := kmsg.NewCreateTopicsRequestTopic()
	rt.Topic, rt.NumPartitions, rt.ReplicationFactor = *topic, int32(*partitions), int16(*rf)
	for _, c := range configs {
		tc := kmsg.NewCreateTopicsRequestTopicConfig()
		tc.Name, tc.Value = c[0], kmsg.StringPtr(c[1])
		rt.Configs = append(rt.Configs, tc)
	}
	req.Topics = append(req.Topics, rt)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		fmt.Fprintf(stderr, "kafkasim create-topic: %v\n", err)
		return 1
	}
	if len(resp.Topics) != 1 {
		fmt.Fprintf(stderr, "kafkasim create-topic: answer names %d topics\n", len(resp.Topics))
		return 1
	}
	if err := kerr.ErrorForCode(resp.Topics[0].ErrorCode); err != nil {
		msg := err.Error()
		if m := resp.Topics[0].ErrorMessage; m != nil {
			msg += ": " + *m
		}
		fmt.Fprintf(stderr, "kafkasim create-topic: %s: %s\n", *topic, msg)
		return 1
	}
	fmt.Fprintf(stdout, "created topic %s: %d partitions, replication factor %d\n", *topic, *partitions, *rf)
	return 0
}

// configList is the repeated --config NAME=VALUE flag.
type configList [][2]string

func (l *configList) String() string {
	var parts []string
	for _, c := range *l {
		parts = append(parts, c[0]+"="+c[1])
	}
	return strings.Join(parts, ",")
}

func (l *configList) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return fmt.Errorf("%q: want NAME=VALUE, such as min.insync.replicas=2", s)
	}
	*l = append(*l, [2]string{name, value})
	return nil
}
