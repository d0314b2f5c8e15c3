// Command patchtable prints the table of the carried netstack's patch
// series that docs/netstack.md holds, generated from the series file and
// the patch headers under internal/third_party/gvisor-patches. With -w
// it rewrites the table in that file, between its marker comments, in
// place. internal/docs' TestNetstackPatchTable fails when the committed
// table differs from what this prints. gvisor.sh -table runs it with -w.
//
// Run it from the repository's top directory:
//
//	go run ./internal/docs/patchtable [-w docs/netstack.md]
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/ustack-dev/ustack/internal/docs"
)

func main() {
	root := flag.String("root", ".", "the repository's top directory")
	write := flag.String("w", "", "rewrite the table in this Markdown `file` instead of printing it")
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintln(os.Stderr, "usage: patchtable [-root dir] [-w file]")
		os.Exit(2)
	}
	table, err := docs.PatchTable(*root)
	if err != nil {
		fmt.Fprintln(os.Stderr, "patchtable:", err)
		os.Exit(1)
	}
	if *write == "" {
		fmt.Print(table)
		return
	}
	doc, err := os.ReadFile(*write)
	if err != nil {
		fmt.Fprintln(os.Stderr, "patchtable:", err)
		os.Exit(1)
	}
	out, err := docs.ReplaceTable(string(doc), table)
	if err != nil {
		fmt.Fprintf(os.Stderr, "patchtable: %s: %v\n", *write, err)
		os.Exit(1)
	}
	if err := os.WriteFile(*write, []byte(out), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "patchtable:", err)
		os.Exit(1)
	}
	fmt.Printf("patchtable: wrote the patch table into %s\n", *write)
}
