package docs

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// The markers around the generated patch table in docs/netstack.md.
const (
	TableBegin = "<!-- patch table: generated from the patch headers by internal/third_party/gvisor.sh -table; do not edit -->"
	TableEnd   = "<!-- end of patch table -->"
)

// A patch is one line of the netstack patch series with what its file
// says about itself.
type patch struct {
	num, name string // "0001", "rcv-window-never-shrinks"
	section   string // the series heading above it
	upstream  bool   // marked "upstream" in the series
	note      string // the series line's comment, if any
	subject   string // the header's Subject line
	why       string // the header's What and Why paragraphs
	test      string // the header's Test paragraph
	added     int    // diff lines added
	removed   int    // diff lines removed
	overlay   []overlayFile
}

type overlayFile struct {
	name  string // base name
	lines int
}

var (
	patchName = regexp.MustCompile(`^([0-9]{4})-([a-z0-9-]+)\.patch$`)
	// References a header's What and Why make: RFC sections and Linux's
	// functions and files.
	rfcRef   = regexp.MustCompile(`RFC [0-9]+(?:,? §[0-9]+(?:\.[0-9]+)*(?: [A-Z][0-9])?)?`)
	linuxRef = regexp.MustCompile(`\b(?:__)?(?:tcp|ip|dst|cookie|inet|neigh)_[a-z0-9_]+\b(?:\.c)?`)
	testRef  = regexp.MustCompile(`\b(?:Test|Benchmark|Fuzz)[A-Z][A-Za-z0-9_]*`)
	// A header paragraph starts with a capitalized word and a colon at
	// the start of a line: "Subject:", "What:", "Why:", "Test:".
	headerKey = regexp.MustCompile(`^([A-Z][a-z]+):(?:\s|$)`)
)

// readSeries reads the patch series of dir (internal/third_party/
// gvisor-patches), in the order gvisor.sh applies it.
func readSeries(dir string) ([]*patch, error) {
	f, err := os.Open(filepath.Join(dir, "series"))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var (
		out     []*patch
		section string
	)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, comment, _ := strings.Cut(sc.Text(), "#")
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
			continue
		case strings.HasPrefix(fields[0], "["):
			section = strings.Trim(strings.TrimSpace(line), "[]")
			continue
		}
		m := patchName.FindStringSubmatch(fields[0])
		if m == nil {
			return nil, fmt.Errorf("series: %q is not a patch name", fields[0])
		}
		p := &patch{num: m[1], name: m[2], section: section, note: strings.TrimSpace(comment)}
		for _, mark := range fields[1:] {
			if mark != "upstream" {
				return nil, fmt.Errorf("series: %s: unknown mark %q", fields[0], mark)
			}
			p.upstream = true
		}
		out = append(out, p)
	}
	return out, sc.Err()
}

// readPatch fills in what p's file and overlay directory say.
func readPatch(p *patch, dir, overlay string) error {
	b, err := os.ReadFile(filepath.Join(dir, p.num+"-"+p.name+".patch"))
	if err != nil {
		return err
	}
	inDiff := false
	var para *string
	for _, line := range strings.Split(string(b), "\n") {
		if !inDiff && (strings.HasPrefix(line, "diff ") || strings.HasPrefix(line, "--- ")) {
			inDiff = true
		}
		if inDiff {
			switch {
			case strings.HasPrefix(line, "+++ "), strings.HasPrefix(line, "--- "):
			case strings.HasPrefix(line, "+"):
				p.added++
			case strings.HasPrefix(line, "-"):
				p.removed++
			}
			continue
		}
		if m := headerKey.FindStringSubmatch(line); m != nil {
			para = nil
			switch m[1] {
			case "Subject":
				p.subject = strings.TrimSpace(line[len(m[0]):])
			case "What", "Why":
				para = &p.why
			case "Test":
				para = &p.test
			}
			line = line[len(m[0]):]
		}
		if para != nil {
			*para += " " + strings.TrimSpace(line)
		}
	}
	if p.subject == "" {
		return fmt.Errorf("%s-%s.patch: no Subject line", p.num, p.name)
	}
	root := filepath.Join(overlay, p.num+"-"+p.name)
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		p.overlay = append(p.overlay, overlayFile{d.Name(), strings.Count(string(b), "\n")})
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		err = nil
	}
	return err
}

// cell makes s safe inside a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", `\|`)
}

// uniq returns the matches of re in s, each once, in order.
func uniq(re *regexp.Regexp, s string) []string {
	var out []string
	for _, m := range re.FindAllString(s, -1) {
		m = strings.TrimSuffix(strings.Join(strings.Fields(m), " "), ",")
		if !slices.Contains(out, m) {
			out = append(out, m)
		}
	}
	return out
}

// rfcs returns the RFC references in s, each once, "section" written
// §, and an RFC named bare dropped where a section of it is named.
func rfcs(s string) []string {
	refs := uniq(rfcRef, strings.ReplaceAll(s, "section ", "§"))
	return slices.DeleteFunc(refs, func(r string) bool {
		return !strings.Contains(r, "§") && slices.ContainsFunc(refs, func(o string) bool {
			return strings.HasPrefix(o, r+" ")
		})
	})
}

func codeList(names []string) string {
	for i, n := range names {
		names[i] = "`" + n + "`"
	}
	return strings.Join(names, ", ")
}

// PatchTable returns the Markdown table of the netstack patch series
// under root (the repository's top directory), one row per patch in
// series order, from the series file and each patch's header: its
// section and upstream mark, its subject, the RFC sections and Linux
// functions its What and Why paragraphs cite, the tests its Test paragraph
// names, the lines its diff adds and removes, and its overlay files.
func PatchTable(root string) (string, error) {
	dir := filepath.Join(root, "internal/third_party/gvisor-patches")
	overlay := filepath.Join(root, "internal/third_party/gvisor-overlay")
	series, err := readSeries(dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("| patch | section | upstream | what it changes | follows | tests | lines +/− | overlay files (lines) |\n")
	b.WriteString("| --- | --- | --- | --- | --- | --- | ---: | --- |\n")
	for _, p := range series {
		if err := readPatch(p, dir, overlay); err != nil {
			return "", err
		}
		up := ""
		if p.upstream {
			up = "yes"
			if p.note != "" {
				up += " (" + p.note + ")"
			}
		} else if p.note != "" {
			up = p.note
		}
		follows := strings.Join(rfcs(p.why), ", ")
		if fns := uniq(linuxRef, p.why); len(fns) > 0 {
			if follows != "" {
				follows += "; "
			}
			follows += "Linux " + codeList(fns)
		}
		tests := codeList(uniq(testRef, p.test))
		if tests == "" {
			tests = "none named: see the header"
		}
		var files []string
		for _, f := range p.overlay {
			files = append(files, fmt.Sprintf("`%s` (%d)", f.name, f.lines))
		}
		fmt.Fprintf(&b, "| %s %s | %s | %s | %s | %s | %s | +%d −%d | %s |\n",
			p.num, p.name, cell(p.section), cell(up), cell(p.subject), cell(follows), cell(tests),
			p.added, p.removed, strings.Join(files, ", "))
	}
	return b.String(), nil
}

// ReplaceTable returns doc with the text between TableBegin and
// TableEnd replaced by table.
func ReplaceTable(doc, table string) (string, error) {
	before, rest, ok := strings.Cut(doc, TableBegin+"\n")
	if !ok {
		return "", fmt.Errorf("no line %q", TableBegin)
	}
	_, after, ok := strings.Cut(rest, TableEnd)
	if !ok {
		return "", fmt.Errorf("no line %q after the table's beginning", TableEnd)
	}
	return before + TableBegin + "\n" + table + TableEnd + after, nil
}
