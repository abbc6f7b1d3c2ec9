package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/kafkasim/kafkasim/checkers"
	"github.com/kafkasim/kafkasim/history"
)

// A page is one file a CI artifact can hold: no script, nothing fetched,
// every link a fragment that lands on a detail; the same page renders to
// the same bytes; text from a history is escaped, never markup.
func TestAPageIsSelfContainedDeterministicAndEscaped(t *testing.T) {
	h := history.History{
		{ID: 1, Process: "p0", Kind: history.KindSend, Call: 0, Return: 5e8, Outcome: history.OK},
		{ID: 2, Process: "nemesis", Kind: history.KindNemesis, Call: 2e8, Return: 2e8, Outcome: history.OK, Nemesis: &history.Nemesis{Description: "crash broker-0 <b>"}},
		{ID: 3, Process: "p<script>", Kind: history.KindSend, Call: 3e8, Return: history.Never, Outcome: history.Info},
	}
	v := checkers.Verdict{Anomalies: []checkers.Anomaly{{Name: "lost-write", Breaks: []checkers.Guarantee{checkers.AtLeastOnce},
		Witnesses: []checkers.Witness{{Message: `"v1" <lost>`, Ops: []checkers.OpRef{{ID: 3}}}}}}}
	p := Page{Title: "t", Corner: "config", Columns: []string{"crash", "network"},
		Rows:    []Row{{Label: "acks=1", Cells: []Cell{{Text: "at-most-once", Tone: AtMostOnce, Detail: "d-0"}, {}}}},
		Legend:  []Tone{AtMostOnce},
		Details: []Detail{{ID: "d-0", Title: "acks=1 under crash", Timeline: TimelineOf("seed 1", h, v, checkers.AtLeastOnce)}}}
	var a, b bytes.Buffer
	if err := Write(&a, p); err != nil {
		t.Fatal(err)
	}
	if err := Write(&b, p); err != nil {
		t.Fatal(err)
	}
	page := a.String()
	if page != b.String() {
		t.Fatal("the same page rendered twice differs")
	}
	for _, bad := range []string{"<script", "src=", `href="http`, "<b>", "<lost>"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
	for _, m := range regexp.MustCompile(`href="#([^"]+)"`).FindAllStringSubmatch(page, -1) {
		if !strings.Contains(page, `id="`+m[1]+`"`) {
			t.Errorf("link #%s lands nowhere", m[1])
		}
	}
	for _, want := range []string{`<td class="amo"`, `<td class="notrun">not run</td>`, "<svg", `stroke="#0d47a1"`, "crash broker-0 &lt;b&gt;", "lost-write: &#34;v1&#34; &lt;lost&gt;"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}
