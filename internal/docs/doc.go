// Package docs keeps README.md and docs/ true to the repository. Its
// code generates docs/netstack.md's table of the carried netstack's
// patches from the series file and the patch headers (PatchTable; the
// patchtable command and gvisor.sh -table write it). Its tests check
// that README's quick-start commands are the ones CI (.ci/run) runs and
// name packages that exist, that README keeps to the shape the house
// style asks for (at most 250 lines, no commit hashes, nothing dated
// "this round"), that every relative link and anchor in README.md and
// docs/*.md resolves, that the tests and source files they name exist,
// and that docs/netstack.md's patch table is the one the headers
// generate.
package docs
