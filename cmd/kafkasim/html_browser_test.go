package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// browser finds a Chromium to render pages with, or skips the test.
func browser(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome", "headless_shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium on PATH (chromium, chromium-browser, google-chrome): the page is not rendered; install one to run this test")
	return ""
}

// The pages explore, matrix and run write read well in a browser:
// headless Chromium loads each without a script error, its DOM holds the
// grid with every row (a run's: its anomalies and timeline), and it
// renders a screenshot.
func TestTheReportPagesRenderInHeadlessChromium(t *testing.T) {
	chrome := browser(t)
	dir := t.TempDir()
	explore := filepath.Join(dir, "explore.html")
	runCmd(t, append(exploreArgs, "--html", explore)...)
	matrix := filepath.Join(dir, "matrix.html")
	runCmd(t, "matrix", "--scenarios", "acks0,acks1-leader-failover", "--seeds", "4", "--html", matrix)
	run := filepath.Join(dir, "run.html")
	runCmd(t, "run", "--scenario", "acks1-leader-failover", "--seed", "1", "--html", run)
	for _, c := range []struct {
		page string
		rows int // the grid's, or -1 for a run's page
	}{{explore, 3}, {matrix, 2}, {run, -1}} {
		render := func(args ...string) (string, string) {
			t.Helper()
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, chrome, append([]string{"--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
				"--enable-logging=stderr", "--v=0", "--user-data-dir=" + filepath.Join(dir, "profile")}, append(args, "file://"+c.page)...)...)
			var out, errb bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &errb
			if err := cmd.Run(); err != nil {
				t.Fatalf("%s: %v\n%s", chrome, err, errb.String())
			}
			return out.String(), errb.String()
		}
		dom, logs := render("--dump-dom")
		if strings.Contains(logs, "Uncaught") || strings.Contains(logs, "SyntaxError") {
			t.Errorf("%s: script errors:\n%s", c.page, logs)
		}
		switch {
		case c.rows < 0 && (!strings.Contains(dom, "<h2>anomalies</h2>") || !strings.Contains(dom, "<svg")):
			t.Errorf("%s: the rendered DOM lacks the anomalies and the timeline:\n%.2000s", c.page, dom)
		case c.rows >= 0 && (!strings.Contains(dom, `<table class="grid" id="grid">`) || strings.Count(dom, "</tr>") != c.rows+1):
			t.Errorf("%s: the rendered DOM lacks the grid of %d rows:\n%.2000s", c.page, c.rows, dom)
		}
		shot := strings.TrimSuffix(c.page, ".html") + ".png"
		render("--window-size=1400,1000", "--screenshot="+shot)
		png, err := os.ReadFile(shot)
		if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG")) || len(png) < 10_000 {
			t.Errorf("%s: no screenshot (%v, %d bytes)", c.page, err, len(png))
		}
	}
}
