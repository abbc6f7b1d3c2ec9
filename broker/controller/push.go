package controller

import (
	"time"

	"github.com/kafkasim/kafkasim/broker/rpc"
	"github.com/kafkasim/kafkasim/env"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Pushes: the active controller sends every registered broker the image
// the committed entries make, one request at a time; a change while one
// is in flight sends another after it. The image carries the controller's
// epoch (its quorum epoch), and a broker ignores an image from an older
// one.

type pusher struct {
	client   *rpc.Client
	inflight bool
	dirty    bool
	retry    env.TimerID
}

func (c *Controller) pushAll() {
	for _, id := range c.st.brokerIDs() {
		c.pushTo(id)
	}
}

func (c *Controller) pushTo(id int32) {
	if !c.active {
		return
	}
	b := c.st.brokers[id]
	p := c.push[id]
	if p == nil || p.client.Addr() != b.Addr {
		if p != nil {
			p.client.Close()
		}
		p = &pusher{client: rpc.NewClient(c.rt, b.Addr, rpc.ClientOptions{ClientID: "controller", Speaks: pushVersions})}
		c.push[id] = p
	}
	p.dirty = true
	if p.inflight || p.retry != 0 {
		return
	}
	p.dirty = false
	p.inflight = true
	req := c.st.image().ToUpdateMetadata(c.opts.NodeID, b.Epoch)
	p.client.Do(req, 5*time.Second, func(resp kmsg.Response, err error) {
		p.inflight = false
		if c.push[id] != p {
			return // this controller stopped being active, or the broker moved
		}
		if err == nil {
			if code := resp.(*kmsg.UpdateMetadataResponse).ErrorCode; code != 0 {
				err = kerr.ErrorForCode(code)
			}
		}
		if err != nil {
			p.dirty = true
			p.retry = c.e.AfterFunc(200*time.Millisecond, func() {
				p.retry = 0
				if c.push[id] == p && c.st.brokers[id] != nil && p.dirty {
					c.pushTo(id)
				}
			})
			return
		}
		if p.dirty {
			c.pushTo(id)
		}
	})
}
