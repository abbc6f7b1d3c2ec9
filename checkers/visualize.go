package checkers

import (
	"fmt"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"
	"github.com/kafkasim/kafkasim/history"
	"github.com/kafkasim/kafkasim/model"
)

// VisualizeLog writes porcupine's HTML visualization of one partition log
// to path, with the history's fault events (nemesis entries) as
// annotations. Porcupine runs with timeout; on timeout its partial
// linearizations may be empty, but the file still shows the history.
func VisualizeLog(h history.History, l model.Log, path string, timeout time.Duration) error {
	m := model.LogModel()
	m.Partition = nil
	_, info := model.CheckLogVerbose(l, timeout)
	info.AddAnnotations(Annotations(h))
	if err := porcupine.VisualizePath(m, info, path); err != nil {
		return fmt.Errorf("checkers: visualizing %s to %s: %w", l.TP, path, err)
	}
	return nil
}

// Annotations turns a history's nemesis entries into porcupine annotations
// on a "nemesis" row.
func Annotations(h history.History) []porcupine.Annotation {
	var out []porcupine.Annotation
	for i := range h {
		op := &h[i]
		if op.Kind != history.KindNemesis {
			continue
		}
		end := op.Return
		if end == history.Never {
			end = op.Call
		}
		out = append(out, porcupine.Annotation{Tag: "nemesis", Start: op.Call, End: end,
			Description: op.Nemesis.Description, Details: strings.Join(op.Nemesis.Nodes, ", "),
			BackgroundColor: "#f3c4c4"})
	}
	return out
}
