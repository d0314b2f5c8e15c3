package docs

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// root is the repository's top directory, from this package's.
const root = "../.."

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, path))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// quickStart returns the commands in README's Quick start code block,
// comments dropped.
func quickStart(t *testing.T, readme string) [][]string {
	t.Helper()
	_, sec, ok := strings.Cut(readme, "\n## Quick start\n")
	if !ok {
		t.Fatal("README.md has no Quick start section")
	}
	sec, _, _ = strings.Cut(sec, "\n## ")
	_, block, ok := strings.Cut(sec, "```sh\n")
	if !ok {
		t.Fatal("README.md's Quick start has no ```sh block")
	}
	block, _, _ = strings.Cut(block, "```")
	var cmds [][]string
	for _, line := range strings.Split(block, "\n") {
		line, _, _ = strings.Cut(line, "#")
		if f := strings.Fields(line); len(f) > 0 {
			cmds = append(cmds, f)
		}
	}
	return cmds
}

// isSubsequence reports whether the words of sub appear in words in order.
func isSubsequence(sub, words []string) bool {
	i := 0
	for _, w := range words {
		if i < len(sub) && w == sub[i] {
			i++
		}
	}
	return i == len(sub)
}

// TestReadmeQuickStart: README's two commands are what CI runs (each
// command's words appear, in order, in a line of .ci/run, which may add
// flags), and the packages they name exist.
func TestReadmeQuickStart(t *testing.T) {
	cmds := quickStart(t, read(t, "README.md"))
	if len(cmds) != 2 {
		t.Errorf("README.md's Quick start has %d commands, want the two: %q", len(cmds), cmds)
	}
	var ci [][]string
	for _, line := range strings.Split(read(t, ".ci/run"), "\n") {
		ci = append(ci, strings.Fields(line))
	}
	for _, cmd := range cmds {
		if cmd[0] != "go" {
			t.Errorf("quick-start command %q: want a go command", strings.Join(cmd, " "))
			continue
		}
		if !slices.ContainsFunc(ci, func(l []string) bool {
			return len(l) >= 2 && l[0] == cmd[0] && l[1] == cmd[1] && isSubsequence(cmd, l)
		}) {
			t.Errorf("quick-start command %q is not run by .ci/run", strings.Join(cmd, " "))
		}
		for _, arg := range cmd[1:] {
			if !strings.HasPrefix(arg, "./") {
				continue
			}
			dir, recursive := strings.CutSuffix(arg, "/...")
			if recursive && dir == "." {
				continue
			}
			goFiles, _ := filepath.Glob(filepath.Join(root, dir, "*.go"))
			if !recursive && len(goFiles) == 0 {
				t.Errorf("quick-start command %q: %s holds no Go package", strings.Join(cmd, " "), arg)
			} else if _, err := os.Stat(filepath.Join(root, dir)); err != nil {
				t.Errorf("quick-start command %q: %v", strings.Join(cmd, " "), err)
			}
		}
	}
}

// hashLike matches a word that looks like a commit hash: 7 to 40 hex
// digits with at least one digit and one letter.
var hashLike = regexp.MustCompile(`\b[0-9a-f]{7,40}\b`)

// TestReadmeShape: README is an entry point (STYLE.md rule 13): short,
// with history and commit hashes kept in docs/.
func TestReadmeShape(t *testing.T) {
	readme := read(t, "README.md")
	if n := strings.Count(readme, "\n"); n > 250 {
		t.Errorf("README.md has %d lines, want at most 250: move detail to docs/", n)
	}
	if strings.Contains(strings.ToLower(readme), "this round") {
		t.Error(`README.md says "this round": name the run, and keep history in docs/`)
	}
	for _, h := range hashLike.FindAllString(readme, -1) {
		if strings.ContainsAny(h, "0123456789") && strings.ContainsAny(h, "abcdef") {
			t.Errorf("README.md cites %s, which looks like a commit hash: keep those in docs/", h)
		}
	}
}

var (
	fence   = regexp.MustCompile("(?ms)^```.*?^```")
	code    = regexp.MustCompile("`[^`\n]*`")
	link    = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	refDef  = regexp.MustCompile(`(?m)^\[[^\]]+\]:\s*(\S+)`)
	heading = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)
	mdLink  = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// links returns the link targets in a Markdown text, outside code.
func links(text string) []string {
	text = fence.ReplaceAllString(text, "")
	text = code.ReplaceAllString(text, "")
	var out []string
	for _, m := range link.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	for _, m := range refDef.FindAllStringSubmatch(text, -1) {
		out = append(out, m[1])
	}
	return out
}

// anchors returns the anchors GitHub gives a Markdown text's headings:
// lower case, punctuation other than - and _ dropped, spaces as -, a
// repeated one suffixed -1, -2, ….
func anchors(text string) map[string]bool {
	text = fence.ReplaceAllString(text, "")
	seen := map[string]int{}
	out := map[string]bool{}
	for _, m := range heading.FindAllStringSubmatch(text, -1) {
		h := mdLink.ReplaceAllString(m[1], "$1")
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case r == ' ':
				b.WriteByte('-')
			case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			seen[a]++
			a += "-" + strconv.Itoa(n)
		} else {
			seen[a] = 1
		}
		out[a] = true
	}
	return out
}

// TestDocLinks: every relative link in README.md and docs/*.md names a
// file or directory of the repository, and every #anchor one of the
// target's headings.
func TestDocLinks(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no docs/*.md")
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	checked := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, f)
		for _, l := range links(string(b)) {
			if strings.Contains(l, "://") || strings.HasPrefix(l, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(l, "#")
			target := f
			if path != "" {
				target = filepath.Join(filepath.Dir(f), path)
				if _, err := os.Stat(target); err != nil {
					t.Errorf("%s: link %s: no such file", name, l)
					continue
				}
			}
			checked++
			if anchor == "" || !strings.HasSuffix(target, ".md") {
				continue
			}
			tb, err := os.ReadFile(target)
			if err != nil {
				t.Errorf("%s: link %s: %v", name, l, err)
				continue
			}
			if !anchors(string(tb))[anchor] {
				t.Errorf("%s: link %s: no heading with anchor #%s", name, l, anchor)
			}
		}
	}
	t.Logf("%d relative links checked in %d files", checked, len(files))
}

// The code names a document may cite in backquotes that TestDocNames
// checks: a test, benchmark, fuzz target or example function (or a
// family of them, written with a trailing "…"), and a Go, assembly or
// shell file of ours, by path or by name where the text says where. A
// .c name is not checked unless it has a path: the docs cite Linux's
// sources (tcp_bbr.c) by name.
var (
	docFuncName = regexp.MustCompile(`\b(?:Test|Benchmark|Fuzz|Example)[A-Z][A-Za-z0-9_]*`)
	docFileName = regexp.MustCompile(`^(?:[A-Za-z0-9_./-]+\.(?:go|s|sh)|[A-Za-z0-9_.-]*/[A-Za-z0-9_./-]+\.c)$`)
)

// TestDocNames: every test, benchmark, fuzz target and example function
// and every source file that README.md and docs/*.md name in backquotes
// exists, so a rename or a removal cannot leave a document pointing at
// nothing. (docs/benchmark.md and docs/benchmark-run.md, regenerated by
// the benchmark, are left to it.)
func TestDocNames(t *testing.T) {
	funcs := map[string]bool{}
	paths := map[string]bool{}
	bases := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == ".git" || n == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		paths[filepath.ToSlash(rel)] = true
		bases[d.Name()] = true
		if strings.HasSuffix(path, ".go") {
			b, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			for _, m := range regexp.MustCompile(`(?m)^func ((?:Test|Benchmark|Fuzz|Example)\w*)\(`).FindAllSubmatch(b, -1) {
				funcs[string(m[1])] = true
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	for _, f := range files {
		name, _ := filepath.Rel(root, f)
		if strings.HasPrefix(filepath.Base(f), "benchmark") {
			continue
		}
		text := fence.ReplaceAllString(read(t, name), "")
		for _, c := range code.FindAllString(text, -1) {
			c = strings.Trim(c, "`")
			for _, fn := range docFuncName.FindAllString(c, -1) {
				if strings.HasSuffix(c, fn+"…") {
					continue // a family: TestPrivileged…
				}
				if !funcs[fn] {
					t.Errorf("%s names %s, which no Go file defines", name, fn)
				}
			}
			if docFileName.MatchString(c) && !paths[c] && !bases[c] {
				t.Errorf("%s names %s, which is not a file of the repository", name, c)
			}
		}
	}
}

// TestNetstackPatchTable: docs/netstack.md's patch table, between its
// markers, is the one the series file and the patch headers generate
// (PatchTable), so it lists every patch in series order and cannot
// drift from what the headers say. A patch file the series leaves out
// fails here too, as gvisor.sh refuses it.
func TestNetstackPatchTable(t *testing.T) {
	table, err := PatchTable(root)
	if err != nil {
		t.Fatal(err)
	}
	patches, err := filepath.Glob(filepath.Join(root, "internal/third_party/gvisor-patches/*.patch"))
	if err != nil {
		t.Fatal(err)
	}
	if len(patches) == 0 {
		t.Fatal("no patches found under internal/third_party/gvisor-patches: update this test to where the series lives")
	}
	for _, p := range patches {
		num, name, _ := strings.Cut(strings.TrimSuffix(filepath.Base(p), ".patch"), "-")
		if !strings.Contains(table, "| "+num+" "+name+" |") {
			t.Errorf("the series does not list %s", filepath.Base(p))
		}
	}
	doc := read(t, "docs/netstack.md")
	want, err := ReplaceTable(doc, table)
	if err != nil {
		t.Fatalf("docs/netstack.md: %v", err)
	}
	if doc != want {
		t.Errorf("docs/netstack.md's patch table differs from the patch headers: run internal/third_party/gvisor.sh -table (or go run ./internal/docs/patchtable -w docs/netstack.md) and commit the result")
	}
}

// TestPatchTableReadsHeaders: the generator takes each column from the
// header line or paragraph it names, and counts diff lines only below
// the header.
func TestPatchTableReadsHeaders(t *testing.T) {
	dir := t.TempDir()
	patches := filepath.Join(dir, "internal/third_party/gvisor-patches")
	overlay := filepath.Join(dir, "internal/third_party/gvisor-overlay/0007-b/pkg")
	for _, d := range []string{patches, overlay} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	files := map[string]string{
		filepath.Join(patches, "series"): "# comment\n[fixes]\n0003-a.patch  upstream  # google/gvisor#1\n[ours]\n0007-b.patch\n",
		filepath.Join(patches, "0003-a.patch"): "Subject: tcp: a | b\n\nWhat: per RFC 9293 section 3.10.7.4.\nWhy: RFC 9293, as Linux's\ntcp_ack does.\n\nTest: TestA (fails\nwithout: TestNotB is prose).\n\n" +
			"--- a/x.go\n+++ b/x.go\n@@ -1,2 +1,2 @@\n-old\n+new\n+more\n",
		filepath.Join(patches, "0007-b.patch"): "Subject: stack: b\n\nWhy: ours.\n\nTest: the whole suite.\n",
		filepath.Join(overlay, "b.go"):         "package pkg\n\n",
	}
	for name, text := range files {
		if err := os.WriteFile(name, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := PatchTable(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"| 0003 a | fixes | yes (google/gvisor#1) | tcp: a \\| b | RFC 9293 §3.10.7.4; Linux `tcp_ack` | `TestA`, `TestNotB` | +2 −1 |  |\n",
		"| 0007 b | ours |  | stack: b |  | none named: see the header | +0 −0 | `b.go` (2) |\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table lacks the row\n%s\ngot\n%s", want, got)
		}
	}
	if _, err := ReplaceTable("no markers", got); err == nil {
		t.Error("ReplaceTable took a document without the markers")
	}
}

// TestLibraryModuleLean: the library's go.mod requires nothing only the
// benchmark uses (plots, asavie/xdp, upstream gVisor), so a program that
// imports ustack does not inherit them; the benchmark's own module
// (bench/go.mod, in go.work) requires them. Nor does anything the library
// requires bring them, or gonum, in: go.sum, which holds every module of
// the graph `GOWORK=off go list -m all` prints, names none of them.
func TestLibraryModuleLean(t *testing.T) {
	lib, sum, bench := read(t, "go.mod"), read(t, "go.sum"), read(t, "bench/go.mod")
	for _, m := range []string{"gonum.org/v1/plot", "github.com/asavie/xdp", "gvisor.dev/gvisor"} {
		if strings.Contains(lib, m+" ") {
			t.Errorf("go.mod requires %s, which only the benchmark uses: require it in bench/go.mod", m)
		}
		if !strings.Contains(bench, m+" ") {
			t.Errorf("bench/go.mod does not require %s", m)
		}
	}
	for _, m := range []string{"gonum.org/", "github.com/asavie/", "gvisor.dev/", "github.com/golangci/"} {
		if strings.Contains("\n"+sum, "\n"+m) {
			t.Errorf("go.sum names %s: something the library requires brings it into every importer's module graph", m)
		}
	}
	work := read(t, "go.work")
	for _, dir := range []string{".", "./bench"} {
		if !slices.Contains(strings.Fields(work), dir) {
			t.Errorf("go.work does not use %s: go run ./bench from the root needs both modules", dir)
		}
	}
}
