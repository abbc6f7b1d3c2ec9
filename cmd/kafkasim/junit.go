package main

import (
	"encoding/xml"
	"fmt"
	"os"
	"strings"

	"github.com/kafkasim/kafkasim/scenarios"
)

// JUnit XML, the report format GitHub Actions, GitLab and Jenkins show
// natively: `--junit F` on matrix (a test case per claim or twin) and sweep
// (a test case per seed). A failure's message is the result; its text
// starts with the repro line. The schema is the common one (Ant's, as
// Jenkins and GitLab read it): testsuites > testsuite > testcase with
// failure, error or skipped, and system-out.

type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Name    string       `xml:"name,attr"`
	Tests   int          `xml:"tests,attr"`
	Fails   int          `xml:"failures,attr"`
	Errors  int          `xml:"errors,attr"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name    string      `xml:"name,attr"`
	Tests   int         `xml:"tests,attr"`
	Fails   int         `xml:"failures,attr"`
	Errors  int         `xml:"errors,attr"`
	Skipped int         `xml:"skipped,attr"`
	Cases   []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitProblem `xml:"skipped,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Text    string `xml:",chardata"`
}

// add appends a case to the suite and counts it.
func (s *junitSuite) add(c junitCase) {
	s.Tests++
	switch {
	case c.Failure != nil:
		s.Fails++
	case c.Error != nil:
		s.Errors++
	case c.Skipped != nil:
		s.Skipped++
	}
	s.Cases = append(s.Cases, c)
}

// writeJUnit writes one suite to path ("" writes nothing).
func writeJUnit(path string, s junitSuite) error {
	if path == "" {
		return nil
	}
	doc := junitSuites{Name: "kafkasim", Tests: s.Tests, Fails: s.Fails, Errors: s.Errors, Suites: []junitSuite{s}}
	b, err := xml.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	b = append([]byte(xml.Header), append(b, '\n')...)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("--junit %s: %w", path, err)
	}
	return nil
}

// matrixCase is one matrix row as a test case: a claim fails when
// violated or untested, a twin when no seed caught it.
func matrixCase(rw *row) junitCase {
	c := junitCase{Name: rw.Scenario, Classname: "kafkasim.matrix." + strings.ReplaceAll(rw.Faults, ",", "+")}
	out := []string{
		fmt.Sprintf("claims %s, checks %s, observed %s over %d seeds", rw.Claims, rw.Checked, rw.Observed, rw.Seeds),
		fmt.Sprintf("acknowledged median %.2f, 10th percentile %.2f", rw.AckMedian, rw.AckP10),
		"result: " + rw.Result,
	}
	if rw.Repro != "" {
		out = append(out, "first failing seed: "+rw.Repro)
	}
	c.SystemOut = strings.Join(out, "\n")
	switch {
	case rw.Error != "":
		c.Error = &junitProblem{Message: rw.Error, Type: "error", Text: rw.Error}
	case !rw.Pass:
		typ, text := "violated", ""
		switch {
		case rw.Twin:
			typ, text = "not-caught", fmt.Sprintf("no seed of %d caught the twin", rw.Seeds)
		case rw.Violated > 0:
			text = fmt.Sprintf("repro: %s\nfailure: %s\nanomalies: %s", rw.Repro, rw.Failure, rw.Anomalies)
		default:
			typ, text = "untested", "probes never reached: "+strings.Join(rw.NeverReached, ", ")
		}
		c.Failure = &junitProblem{Message: rw.Result, Type: typ, Text: text}
	}
	return c
}

// sweepCase is one seed of a sweep as a test case: a claim's seed fails
// when violated and is skipped when untested; a twin's seeds pass whether
// caught or not (a twin promises to be caught on some seed, not on each),
// and say which in their output.
func sweepCase(s scenarios.Scenario, o outcome, line string) junitCase {
	c := junitCase{Name: fmt.Sprintf("seed %d", o.seed), Classname: "kafkasim.sweep." + s.Name}
	if o.err != nil {
		c.Error = &junitProblem{Message: o.err.Error(), Type: "error", Text: line}
		return c
	}
	r := o.r
	c.SystemOut = fmt.Sprintf("%s\nrepro: %s", r.Summary(), line)
	switch w := r.Word(); {
	case s.Twin():
		if w == "violated" {
			c.SystemOut = "caught: " + c.SystemOut
		} else {
			c.SystemOut = "not caught on this seed: " + c.SystemOut
		}
	case w == "violated":
		c.Failure = &junitProblem{Message: r.Failure, Type: "violated", Text: fmt.Sprintf("repro: %s\nanomalies: %s", line, anomalyNames(r))}
	case w == "untested":
		c.Skipped = &junitProblem{Message: "untested: the probes the claim names were not reached", Text: line}
	}
	return c
}
