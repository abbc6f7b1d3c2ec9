package apps

import (
	"github.com/kafkasim/kafkasim/broker/client"
	"github.com/kafkasim/kafkasim/broker/metadata"
	"github.com/kafkasim/kafkasim/history"
)

// positions are where a consumer stood in each partition before a poll:
// the From of the poll's fetches.
func positions(c *client.Consumer, tps []metadata.TopicPartition) map[metadata.TopicPartition]int64 {
	before := map[metadata.TopicPartition]int64{}
	for _, tp := range tps {
		if pos, ok := c.Position(tp); ok {
			before[tp] = pos
		}
	}
	return before
}

// fetchesOf is what a poll returned, as the history records it: one Fetch
// per partition in the order the records came, From its position before
// the poll (NoOffset if unknown, or if the positions moved under the poll),
// and a new Fetch wherever the records came in a response reporting
// another last stable offset, so each Fetch carries the one its records
// must lie below (read_committed).
func fetchesOf(recs []client.Record, before map[metadata.TopicPartition]int64, moved bool) []history.Fetch {
	var fs []history.Fetch
	last := map[metadata.TopicPartition]int{} // the partition's latest Fetch in fs
	for _, r := range recs {
		tp := metadata.TopicPartition{Topic: r.Topic, Partition: r.Partition}
		i, ok := last[tp]
		if !ok || *fs[i].LastStable != r.LastStableOffset {
			from, known := before[tp]
			switch {
			case ok:
				from = fs[i].Records[len(fs[i].Records)-1].Offset + 1
			case !known || moved:
				from = history.NoOffset
			}
			lso := r.LastStableOffset
			fs = append(fs, history.Fetch{TP: HTP(tp), From: from, LastStable: &lso})
			i = len(fs) - 1
			last[tp] = i
		}
		fs[i].Records = append(fs[i].Records, history.Record{Offset: r.Offset, Message: decodeClientRecord(r)})
	}
	return fs
}
