package broker_test

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/kafkasim/kafkasim/broker"
	"github.com/kafkasim/kafkasim/broker/controller"
	"github.com/twmb/franz-go/pkg/kmsg"
)

const (
	apisBegin = "<!-- broker APIs: made from broker.Versions by TestTheReadmeListsTheAPIsTheBrokerServes; KAFKASIM_WRITE_README=1 go test ./broker -run TestTheReadme rewrites it -->\n"
	apisEnd   = "<!-- end of broker APIs -->\n"
)

// apiTable is the README's table of what a broker serves, and the list of
// Kafka's APIs (as kmsg knows them) it does not.
func apiTable() string {
	var b strings.Builder
	b.WriteString("| API | key | versions | notes |\n|---|---:|---|---|\n")
	for _, r := range broker.Versions {
		fmt.Fprintf(&b, "| %s | %d | %d–%d | %s |\n", kmsg.NameForKey(r.Key), r.Key, r.Min, r.Max, r.Note)
	}
	var controllers, none []string
	for key := int16(0); key < 200; key++ {
		if kmsg.RequestForKey(key) == nil {
			continue
		}
		if _, ok := broker.Versions.Lookup(key); ok {
			continue
		}
		if _, ok := controller.Versions.Lookup(key); ok {
			controllers = append(controllers, kmsg.NameForKey(key))
		} else {
			none = append(none, kmsg.NameForKey(key))
		}
	}
	fmt.Fprintf(&b, "\nServed by the controllers only (KRaft's own and what brokers send them): %s.\n", strings.Join(controllers, ", "))
	fmt.Fprintf(&b, "\nNot served: %s.\n", strings.Join(none, ", "))
	return b.String()
}

// The README's API table is the one the code serves: a range raised or an
// API added without the README fails here.
func TestTheReadmeListsTheAPIsTheBrokerServes(t *testing.T) {
	const path = "../README.md"
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(data)
	i, j := strings.Index(s, apisBegin), strings.Index(s, apisEnd)
	if i < 0 || j < i {
		t.Fatalf("%s has no API table between %q and %q", path, apisBegin, apisEnd)
	}
	want := s[:i+len(apisBegin)] + apiTable() + s[j:]
	if want == s {
		return
	}
	if os.Getenv("KAFKASIM_WRITE_README") != "" {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("%s's API table is not what broker.Versions serves; KAFKASIM_WRITE_README=1 go test ./broker -run TestTheReadme rewrites it", path)
}

func TestEveryServedAPIIsExplainedWhereItLeavesSomethingOut(t *testing.T) {
	for _, r := range broker.Versions {
		if max := kmsg.RequestForKey(r.Key).MaxVersion(); r.Max < max && r.Note == "" {
			t.Errorf("%s: served up to v%d of kmsg's v%d without a note saying why", kmsg.NameForKey(r.Key), r.Max, max)
		}
	}
}
