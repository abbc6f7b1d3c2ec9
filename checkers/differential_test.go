package checkers_test

import (
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/history/historytest"
	"github.com/kafkasim/kafkasim/model"
)

// cases is how many generated histories the differential and property
// tests run: KAFKASIM_CHECKER_CASES, or def.
func cases(def int) int {
	if s := os.Getenv("KAFKASIM_CHECKER_CASES"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	return def
}

var logDefects = []string{"", "drop-acked-write", "duplicate-value", "swap-offsets", "read-aborted", "read-failed-write", "acked-as-indefinite"}

// randomLogHistory draws a small history with varied concurrency and,
// maybe, one defect.
func randomLogHistory(r *rand.Rand) (history.History, string, int) {
	cfg := historytest.DefaultLogConfig(10+r.IntN(50), 1+r.IntN(3), 1+r.IntN(32))
	cfg.IndefinitePercent = r.IntN(20)
	cfg.FailPercent = r.IntN(10)
	cfg.TxnPercent = r.IntN(40)
	cfg.BatchMax = 1 + r.IntN(3)
	cfg.LatencyMax = 1 + int64(r.IntN(3000))
	h := historytest.Log(cfg, r)
	name := logDefects[r.IntN(len(logDefects))]
	if name == "" {
		if r.IntN(3) == 0 {
			return scramble(h, r), "scramble", cfg.Clients
		}
		return h, "", cfg.Clients
	}
	bad, _, ok := historytest.Defects[name](h, r)
	if !ok {
		return h, "", cfg.Clients
	}
	return bad, name, cfg.Clients
}

// TestFastLogCheckerAgreesWithPorcupine runs both on thousands of generated
// partition logs, correct and defective, and requires identical verdicts;
// porcupine runs twice, with and without appends chained in offset order
// (LogInput.After), and must agree with itself too.
func TestFastLogCheckerAgreesWithPorcupine(t *testing.T) {
	n := cases(2000)
	var decided, illegal, unknown, plainDecided int
	for i := 0; i < n; i++ {
		r := rand.New(rand.NewPCG(uint64(i), 99))
		h, defect, clients := randomLogHistory(r)
		if err := h.Validate(); err != nil {
			t.Fatalf("case %d (%s): invalid history: %v", i, defect, err)
		}
		for _, l := range model.Logs(h) {
			want := model.CheckLog(l, 2*time.Second)
			if want == porcupine.Unknown {
				unknown++
				continue
			}
			// Unchained, porcupine backtracks over offset gaps: exponential
			// in concurrency, so only for few clients.
			if clients <= 6 {
				if plain := model.CheckLog(l.Unchained(), 500*time.Millisecond); plain != porcupine.Unknown {
					plainDecided++
					if plain != want {
						t.Fatalf("case %d (defect %q) %s: porcupine says %s with appends chained in offset order, %s without", i, defect, l.TP, want, plain)
					}
				}
			}
			got := checkers.CheckLog(l)
			decided++
			if got.Result == porcupine.Illegal {
				illegal++
			}
			if got.Result != want {
				t.Fatalf("case %d (defect %q) %s: porcupine says %s, fast checker says %s (%v)", i, defect, l.TP, want, got.Result, got.Violation)
			}
		}
	}
	t.Logf("%d partition logs decided identically (%d illegal), %d left Unknown by porcupine; %d also decided identically by unchained porcupine",
		decided, illegal, unknown, plainDecided)
	if illegal < decided/10 || illegal == decided {
		t.Fatalf("generated mix is lopsided: %d illegal of %d", illegal, decided)
	}
}

// scramble makes one small random change the named defects do not: a
// send's offset or a read record's offset moved by one or two, two records
// of a read swapped, a read's position changed, a send acknowledged without
// its offset, a call moved after others. The result may or may not be
// legal; the checkers must agree on which.
func scramble(h history.History, r *rand.Rand) history.History {
	out := slices.Clone(h)
	for tries := 0; tries < 20; tries++ {
		i := r.IntN(len(out))
		op := &out[i]
		switch {
		case op.Kind == history.KindSend && op.Send.Offset >= 0:
			s := *op.Send
			switch r.IntN(3) {
			case 0:
				s.Offset = max(0, s.Offset+int64(r.IntN(5))-2)
			case 1:
				s.Offset = history.NoOffset
			case 2:
				op.Call = op.Return // invoked later: tighter real time
			}
			op.Send = &s
			return out
		case op.Kind == history.KindPoll && len(op.Poll.Fetched) > 0 && len(op.Poll.Fetched[0].Records) > 0:
			p := *op.Poll
			p.Fetched = slices.Clone(p.Fetched)
			f := &p.Fetched[0]
			f.Records = slices.Clone(f.Records)
			k := r.IntN(len(f.Records))
			switch r.IntN(3) {
			case 0:
				f.Records[k].Offset = max(0, f.Records[k].Offset+int64(r.IntN(5))-2)
			case 1:
				j := r.IntN(len(f.Records))
				f.Records[k], f.Records[j] = f.Records[j], f.Records[k]
			case 2:
				f.From = int64(r.IntN(int(f.Records[k].Offset) + 2))
			}
			op.Poll = &p
			return out
		}
	}
	return out
}
