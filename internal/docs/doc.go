// Package docs holds no code: its tests keep README.md and docs/ true to
// the repository. They check that README's quick-start commands are the
// ones CI (.ci/run) runs and name packages that exist, that README keeps
// to the shape the house style asks for (at most 250 lines, no commit
// hashes, nothing dated "this round"), that every relative link and
// anchor in README.md and docs/*.md resolves, and that docs/netstack.md
// lists every patch of the carried netstack.
package docs
