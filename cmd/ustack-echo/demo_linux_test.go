package main

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ustack-dev/ustack/internal/child"
	"github.com/ustack-dev/ustack/internal/perftest"
	"github.com/ustack-dev/ustack/vethtest"
)

// demoAgreement is how far apart the demo's and the benchmark's
// ustack/kernel ratios may be (a factor either way): wide, since the two
// measure a few hundred milliseconds each on a small shared VM.
const demoAgreement = 2.5

// TestPrivilegedDemoAgreesWithBench runs the demo and `bench -quick` in
// the same placement, with the same durations and connections, and
// checks that they tell the same story: ustack's ping-pong p50 and
// requests/s as ratios to the kernel's agree within demoAgreement, and
// the demo's closing lines name the placement and say where ustack wins.
func TestPrivilegedDemoAgreesWithBench(t *testing.T) {
	vethtest.Privileged(t)
	own, err := child.OwnCPUs()
	if err != nil {
		t.Fatal(err)
	}
	var placement []string
	if len(own) < 2 {
		placement = []string{"-shared"}
	}
	var out strings.Builder
	rep, err := demo(context.Background(), &out, append([]string{"-duration", "400ms", "-conns", "8", "-warmup", "300"}, placement...))
	t.Logf("demo:\n%s", out.String())
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nustack wins on: ", "\nustack does not win on: ", "\nPlacement: "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the demo's closing lines lack %q", want)
		}
	}
	if want := "Placement: " + map[bool]string{true: "two hosts", false: "shared"}[len(own) >= 2]; !strings.Contains(out.String(), want) {
		t.Errorf("the demo's closing lines do not say %q", want)
	}
	for _, f := range rep.Figures {
		if f.P50 <= 0 || f.BulkGbps <= 0 || f.Server != "floor" && f.ReqPerSec <= 0 {
			t.Errorf("%s: implausible figures %+v", f.Server, f)
		}
	}

	dir := t.TempDir()
	args := []string{"run"}
	if perftest.RaceEnabled {
		args = append(args, "-race") // the demo's children are race-built too
	}
	args = append(append(args, "./bench", "-quick", "-contenders", "ustack", "-workloads", "pingpong,rate", "-out", dir), placement...)
	cmd := exec.Command("go", args...)
	cmd.Dir = filepath.Join("..", "..")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, b)
	}
	js, err := os.ReadFile(filepath.Join(dir, "results.json"))
	if err != nil {
		t.Fatal(err)
	}
	var bench struct {
		Medians []struct {
			Contender, Workload string
			RTT                 *struct{ P50 float64 } `json:"rtt_us"`
			ReqPerSec           float64                `json:"requests_per_s"`
		}
	}
	if err := json.Unmarshal(js, &bench); err != nil {
		t.Fatal(err)
	}
	fig := map[string]float64{}
	for _, m := range bench.Medians {
		switch {
		case m.Workload == "pingpong" && m.RTT != nil:
			fig[m.Contender+"/p50"] = m.RTT.P50
		case m.Workload == "rate":
			fig[m.Contender+"/rate"] = m.ReqPerSec
		}
	}
	k, u := rep.Figures["kernel"], rep.Figures["ustack"]
	for _, c := range []struct {
		what        string
		demo, bench float64
	}{
		{"ping-pong p50 ×kernel", u.P50 / k.P50, fig["ustack/p50"] / fig["kernel/p50"]},
		{"requests/s ×kernel", u.ReqPerSec / k.ReqPerSec, fig["ustack/rate"] / fig["kernel/rate"]},
	} {
		t.Logf("%s: demo %.2f, bench -quick %.2f", c.what, c.demo, c.bench)
		if !(c.demo > 0 && c.bench > 0 && c.demo/c.bench <= demoAgreement && c.bench/c.demo <= demoAgreement) {
			t.Errorf("%s: demo %.2f, bench -quick %.2f: more than %.1f× apart\nbench:\n%s", c.what, c.demo, c.bench, demoAgreement, b)
		}
	}
}
