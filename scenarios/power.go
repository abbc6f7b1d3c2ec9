package scenarios

import (
	"fmt"
	"strings"

	"github.com/kafkasim/kafkasim/faults"
	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/probe"
)

// Power is what a run put at stake: a verdict over a run that acknowledged
// little, or whose faults all missed, is weak evidence, and the report says
// so in numbers.
type Power struct {
	// Intents is how many messages the producer applications meant to send.
	Intents int `json:"intents"`
	// Acknowledged, Failed and Indefinite count the messages sent by
	// outcome: ok, a definite failure, or unknown (timed out, cut off,
	// crashed before the answer).
	Acknowledged int `json:"acknowledged"`
	Failed       int `json:"failed"`
	Indefinite   int `json:"indefinite"`
	// Transactions of consume-transform-produce processors, by outcome.
	TxnCommitted int `json:"txn_committed,omitempty"`
	TxnAborted   int `json:"txn_aborted,omitempty"`
	TxnUnknown   int `json:"txn_unknown,omitempty"`
	// FaultsFired counts the schedule's actions that acted on the world;
	// FaultsSkipped those that found nothing to act on (a role nobody
	// played, a trigger whose probe was never hit).
	FaultsFired   int `json:"faults_fired"`
	FaultsSkipped int `json:"faults_skipped"`
}

// AcknowledgedFraction is Acknowledged / Intents (0 with no intents).
func (p Power) AcknowledgedFraction() float64 {
	if p.Intents == 0 {
		return 0
	}
	return float64(p.Acknowledged) / float64(p.Intents)
}

// powerOf counts what history h and the fired faults put at stake.
func powerOf(intents int, h history.History, fired []faults.Fired) Power {
	p := Power{Intents: intents}
	for i := range h {
		op := &h[i]
		switch {
		case op.Send != nil && op.Send.Txn == 0 && op.Send.TP.Topic == inputTopic:
			n := len(op.Send.Messages)
			switch op.Outcome {
			case history.OK:
				p.Acknowledged += n
			case history.Fail:
				p.Failed += n
			default:
				p.Indefinite += n
			}
		case op.Txn != nil:
			switch op.Outcome {
			case history.OK:
				p.TxnCommitted++
			case history.Fail:
				p.TxnAborted++
			default:
				p.TxnUnknown++
			}
		}
	}
	for _, f := range fired {
		if f.Skipped == "" {
			p.FaultsFired++
		} else {
			p.FaultsSkipped++
		}
	}
	return p
}

// String is the power line a run prints.
func (p Power) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d intents, %d acknowledged (%.0f%%), %d failed, %d indefinite",
		p.Intents, p.Acknowledged, 100*p.AcknowledgedFraction(), p.Failed, p.Indefinite)
	if p.TxnCommitted+p.TxnAborted+p.TxnUnknown > 0 {
		fmt.Fprintf(&b, "; transactions %d committed, %d aborted, %d unknown", p.TxnCommitted, p.TxnAborted, p.TxnUnknown)
	}
	fmt.Fprintf(&b, "; faults %d fired, %d skipped", p.FaultsFired, p.FaultsSkipped)
	return b.String()
}

// probesLine prints probe counts as "name hits, ..." ("none" when empty).
func ProbesLine(c probe.Counts) string {
	if len(c) == 0 {
		return "none"
	}
	parts := make([]string, len(c))
	for i, x := range c {
		parts[i] = fmt.Sprintf("%s %d", x.Name, x.Hits)
	}
	return strings.Join(parts, ", ")
}
