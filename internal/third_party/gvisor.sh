#!/usr/bin/env bash
# Recreates internal/third_party/gvisor, ustack's copy of gVisor's netstack:
# the packages ustack needs (ROOTS and everything they import), taken from
# the gvisor.dev/gvisor module at the version bench/go.mod pins, with
# upstream's own unit tests for the packages the series patches
# (TEST_PKGS), renamed into ustack's module path, gofmt'ed, then changed
# by the patch series:
#
#   gvisor-patches/series     the patches in the order they apply, in
#                             sections, upstream candidates marked
#   gvisor-patches/*.patch    one change each: a header (what, why, test)
#                             and a unified diff, applied with no fuzz
#   gvisor-overlay/NNNN-x/    whole files of ours that patch NNNN-x brings
#                             (BBR, rate sampling), copied into the tree
#                             right after that patch applies, so they are
#                             read, vetted and edited as Go files, not as
#                             diff lines. No patch may touch them.
#
#   gvisor.sh                 rewrite the copy (edits made in the copy to
#                             overlay files are first kept in the overlay;
#                             other edits in the copy are discarded)
#   gvisor.sh -check          fail if the copy differs from upstream plus
#                             the series (CI)
#   gvisor.sh -check-upstream fail if the patches marked upstream (the
#                             series' first ones) do not apply to pristine
#                             upstream alone, or the result does not
#                             build or pass upstream's tests (CI)
#   gvisor.sh -vet            go vet the packages that hold overlay files,
#                             reporting what it finds in those files (the
#                             rest is upstream's code) (CI)
#   gvisor.sh -mkpatch NAME   write the difference between the copy as
#                             edited and upstream plus the series as the
#                             next patch, NNNN-NAME.patch, appended to the
#                             series; files the edit adds go to
#                             gvisor-overlay/NNNN-NAME/
#   gvisor.sh -amend NNNN     fold the copy's edits into patch NNNN (header
#                             kept): the patches after it in the series are
#                             reversed from the copy, so the edits must not
#                             touch what they change
#   gvisor.sh -refresh        rewrite every patch as the diff it makes when
#                             applied in series order (headers kept): after
#                             moving patches in the series, or when patch(1)
#                             reports one applied at an offset
#   gvisor.sh -resume DIR     go on after a patch that did not apply (see
#                             below)
#   gvisor.sh -table          rewrite the patch table in docs/netstack.md
#                             from the series and the patch headers (go run
#                             ./internal/docs/patchtable -w; without -w it
#                             prints the table); go test ./internal/docs
#                             fails while the committed table differs
#
# A patch that does not apply exactly (a hunk would need fuzz, or fails)
# stops the run. The tree is kept in a work directory: DIR/gvisor holds
# upstream plus the patches before it plus the hunks of it that applied,
# with the rejected hunks beside their files as *.rej. Apply those by hand
# in DIR/gvisor, delete the .rej files, and run gvisor.sh -resume DIR: the
# failed patch is rewritten from the tree as fixed (header kept) and the
# rest of the series applies; the result replaces the copy. (Or edit the
# patch itself and run gvisor.sh again.) This is how the series moves to a
# new upstream version: change bench/go.mod's pin, run gvisor.sh, resume until
# done, then run ustack's tests.
#
# To change netstack: edit files under internal/third_party/gvisor, run
# -mkpatch (or -amend), write the patch's header (what, why, which test),
# put its line in the right section of the series (a fix upstream could
# take, marked upstream, in an [upstream: ...] section, which come first:
# -check-upstream then shows it applies without the patches of ours), run
# gvisor.sh -check and gvisor.sh -table, and commit the copy, the patch,
# the series, any overlay and docs/netstack.md together.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
top="$(cd "$here/../.." && pwd)"
cd "$top"

upstream=gvisor.dev/gvisor
ours=github.com/ustack-dev/ustack/internal/third_party/gvisor
copy="$here/gvisor"
patches="$here/gvisor-patches"
series="$patches/series"
overlay="$here/gvisor-overlay"

# The packages ustack imports; their dependencies come along. pkg/goid is
# imported only under the checklocks and lockdep build tags, which go list
# does not follow but go mod tidy does.
ROOTS=(
	pkg/buffer
	pkg/goid
	pkg/tcpip
	pkg/tcpip/adapters/gonet
	pkg/tcpip/header
	pkg/tcpip/network/arp
	pkg/tcpip/network/ipv4
	pkg/tcpip/network/ipv6
	pkg/tcpip/stack
	pkg/tcpip/transport/icmp
	pkg/tcpip/transport/tcp
	pkg/tcpip/transport/udp
	pkg/waiter
)
# Upstream's own unit tests for the packages the series patches, run by
# go test ./... with ustack's. The pinned module is gVisor's go branch,
# which holds no test files and none of the test-only packages they
# import, so they come from upstream's source tree at tests_version: the
# master commit 3c5eee17dc45, two weeks before the pin's (whose master
# commit is not known here). A test that fails because of a patch's
# intended change is skipped or fixed by a patch of the series, which
# says why; one that assumes upstream code newer than tests_version is
# skipped the same way.
tests_version=v0.0.0-20260822013939-3c5eee17dc45
# The packages whose *_test.go files are carried. Upstream's TCP e2e
# suite (pkg/tcpip/transport/tcp/test/e2e) is not: its directory holds
# a helper package and ten test packages (one per Bazel test target),
# which go test cannot build from one directory, and it needs
# pkg/test/testutil, which imports runsc.
TEST_PKGS=(
	pkg/buffer
	pkg/tcpip
	pkg/tcpip/stack
	pkg/tcpip/transport/tcp
)
# Test files left out: a Bazel test of its own in another Go package.
TEST_SKIP=(
	pkg/tcpip/stack/bridge_test.go
)
# Test-only packages the tests import, from tests_version (the go branch
# lacks them), and packages of the pin they import beyond ROOTS'.
TEST_ONLY=(
	pkg/tcpip/checker
	pkg/tcpip/prependable
	pkg/tcpip/testutil
)
TEST_ROOTS=(
	pkg/tcpip/faketime
	pkg/tcpip/link/channel
	pkg/tcpip/link/ethernet
	pkg/tcpip/link/loopback
	pkg/tcpip/link/veth
)
# Platforms whose dependency sets are unioned, so the copy builds (and
# go vet runs) wherever ustack does.
PLATFORMS=(linux/amd64 linux/arm64 darwin/arm64 windows/amd64 freebsd/amd64)

die() { echo "gvisor.sh: $*" >&2; exit 1; }

# SERIES: the patch file names in apply order, from the series file:
# "# ..." comments, "[section]" headings, and lines "NNNN-name.patch
# [upstream]". Every patch file must be listed once, and every overlay
# directory must belong to a listed patch. The patches marked upstream
# come first, UPSTREAM of them: a fix upstream could take must apply
# without any patch of ours under it.
SERIES=()
UPSTREAM=0
read_series() {
	local line name mark rest p ours=
	SERIES=()
	UPSTREAM=0
	[ -f "$series" ] || die "$series is missing"
	while IFS= read -r line || [ -n "$line" ]; do
		line=${line%%#*}
		read -r name mark rest <<<"$line" || true
		[ -n "$name" ] || continue
		[[ "$name" == \[* ]] && continue
		[[ "$name" =~ ^[0-9]{4}-[a-z0-9-]+\.patch$ ]] || die "series: '$name' is not a patch name (NNNN-name.patch)"
		[[ -z "$mark" || "$mark" == upstream ]] && [ -z "$rest" ] || die "series: $name: unknown mark '$mark $rest' (only 'upstream')"
		[ -f "$patches/$name" ] || die "series lists $name, which gvisor-patches/ does not hold"
		for p in "${SERIES[@]}"; do [ "$p" != "$name" ] || die "series lists $name twice"; done
		if [ -z "$mark" ]; then
			ours=$name
		elif [ -n "$ours" ]; then
			die "series: $name is marked upstream but comes after $ours, which is not: the upstream-marked patches come first"
		else
			UPSTREAM=$((UPSTREAM + 1))
		fi
		SERIES+=("$name")
	done <"$series"
	for p in "$patches"/*.patch; do
		[ -e "$p" ] || continue
		in_series "$(basename "$p")" || die "$(basename "$p") is not in the series: add it to gvisor-patches/series"
	done
	if [ -d "$overlay" ]; then
		for p in "$overlay"/*/; do
			[ -d "$p" ] || continue
			in_series "$(basename "$p").patch" || die "gvisor-overlay/$(basename "$p") belongs to no patch in the series"
		done
	fi
}
in_series() { local p; for p in "${SERIES[@]}"; do [ "$p" = "$1" ] && return 0; done; return 1; }

# overlay_files NAME: the files patch NAME's overlay brings, relative to
# the tree. all_overlay_files: every patch's.
overlay_files() { [ -d "$overlay/${1%.patch}" ] && (cd "$overlay/${1%.patch}" && find . -type f | sed 's#^\./##' | sort) || true; }
all_overlay_files() { local p; for p in "${SERIES[@]}"; do overlay_files "$p"; done; }
# A patch with a header and no diff is legal: its change is all overlay.
has_diff() { grep -q '^--- ' "$1"; }

# -table reads only the series and the patches: no upstream needed.
if [ "${1:-}" = -table ]; then
	read_series
	exec go run ./internal/docs/patchtable -w docs/netstack.md
fi

# The upstream version is the one the benchmark's module pins (its
# gvisor-xdp contender runs that same version unmodified): the library's
# own go.mod does not require gVisor's module at all. Upstream's package
# lists are resolved in that module, outside any workspace.
pin="$top/bench"
gopin() { (cd "$pin" && GOWORK=off go "$@"); }
version=$(gopin list -m -f '{{.Version}}' "$upstream") || die "bench/go.mod does not require $upstream"
src=$(gopin mod download -json "$upstream@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$src" ] || die "could not download $upstream@$version"
testsrc=$(gopin mod download -json "$upstream@$tests_version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$testsrc" ] || die "could not download $upstream@$tests_version (upstream's tests)"

# pristine DEST: upstream's packages, renamed and formatted, no patches.
pristine() {
	local dest=$1 pkgs=() p os arch
	for p in "${ROOTS[@]}" "${TEST_ROOTS[@]}"; do pkgs+=("$upstream/$p"); done
	local list
	list=$(for p in "${PLATFORMS[@]}"; do
		os=${p%/*} arch=${p#*/}
		GOOS=$os GOARCH=$arch gopin list -deps "${pkgs[@]}"
	done | grep "^$upstream/" | sort -u)
	mkdir -p "$dest"
	for p in $list; do
		rel=${p#"$upstream/"}
		mkdir -p "$dest/$rel"
		# Sources and assembly only: no tests, testdata or build files.
		find "$src/$rel" -maxdepth 1 -type f \( -name '*.go' -o -name '*.s' -o -name '*.h' \) ! -name '*_test.go' \
			-exec cp {} "$dest/$rel/" \;
		chmod -R u+w "$dest/$rel"
	done
	# Upstream's tests, and the test-only packages they import.
	for p in "${TEST_ONLY[@]}"; do
		[ ! -e "$dest/$p" ] || die "TEST_ONLY: the pin has $p: take it from there (TEST_ROOTS)"
		mkdir -p "$dest/$p"
		find "$testsrc/$p" -maxdepth 1 -type f -name '*.go' ! -name '*_test.go' -exec cp {} "$dest/$p/" \;
	done
	for p in "${TEST_PKGS[@]}"; do
		find "$testsrc/$p" -maxdepth 1 -type f -name '*_test.go' -exec cp {} "$dest/$p/" \;
	done
	for p in "${TEST_SKIP[@]}"; do rm "$dest/$p"; done
	chmod -R u+w "$dest"
	find "$dest" -name '*.go' -exec sed -i "s#\"$upstream/pkg/#\"$ours/pkg/#g" {} +
	gofmt -w "$dest"
	cp "$src/LICENSE" "$dest/LICENSE"
	chmod u+w "$dest/LICENSE"
	{
		echo "This is a copy of gVisor's netstack, carried by ustack."
		echo
		echo "Origin:   $upstream $version (Apache License 2.0, see LICENSE)"
		echo "Packages: $(echo "$list" | wc -l), the dependencies of ${ROOTS[*]}"
		echo "          and of what upstream's tests import: ${TEST_ROOTS[*]}"
		echo "Tests:    the *_test.go files of ${TEST_PKGS[*]}"
		echo "          (less ${TEST_SKIP[*]}), and the test-only packages"
		echo "          ${TEST_ONLY[*]}, from $upstream $tests_version"
		echo "Renamed:  $upstream/pkg/... -> $ours/pkg/..."
		echo
		echo "Do not edit these files in place: internal/third_party/gvisor.sh"
		echo "recreates them from upstream plus the patch series in"
		echo "internal/third_party/gvisor-patches (with the overlay files in"
		echo "internal/third_party/gvisor-overlay), and CI checks that they match."
	} >"$dest/ORIGIN"
}

# A run that stops at a patch keeps its work directory; every other run
# removes it.
work=$(mktemp -d "${TMPDIR:-/tmp}/gvisor-series.XXXXXX")
keep=
trap '[ -n "$keep" ] || rm -rf "$work"' EXIT

# apply DEST I [J]: apply SERIES[I:J] (J: to the end) to DEST, each patch
# followed by its overlay. A patch that does not apply exactly stops the
# run (see the header), with DEST as the half-applied tree.
apply() {
	local dest=$1 i=$2 j=${3:-${#SERIES[@]}} name f out
	for ((; i < j; i++)); do
		name=${SERIES[$i]}
		if has_diff "$patches/$name"; then
			# The overlay is ours alone: a patch that edits it hides a
			# change of ours in diff lines again.
			for f in $(all_overlay_files); do
				! grep -q "^+++ b/$f\$" "$patches/$name" || die "$name edits $f, an overlay file: edit gvisor-overlay/ instead"
			done
			if ! out=$(patch --dry-run --forward --fuzz=0 -p1 -d "$dest" <"$patches/$name" 2>&1); then
				stop "$dest" "$i" "$out"
			fi
			patch -s --forward --fuzz=0 -p1 -d "$dest" --no-backup-if-mismatch <"$patches/$name" >/dev/null
		fi
		for f in $(overlay_files "$name"); do
			[ ! -e "$dest/$f" ] || die "gvisor-overlay/${name%.patch}/$f: the tree already has $f (an overlay only adds files)"
			mkdir -p "$(dirname "$dest/$f")"
			cp "$overlay/${name%.patch}/$f" "$dest/$f"
		done
	done
}

# stop DEST I OUTPUT: SERIES[I] does not apply to DEST. Keep DEST as it
# was before (for -resume to diff against) and with the patch applied as
# far as it goes, then exit.
stop() {
	local dest=$1 i=$2 out=$3 name=${SERIES[$2]} state=$work
	rm -rf "$state/before"
	cp -a "$dest" "$state/before"
	if [ "$dest" != "$state/gvisor" ]; then
		rm -rf "$state/gvisor"
		cp -a "$dest" "$state/gvisor"
	fi
	patch --forward --fuzz=0 -p1 -d "$state/gvisor" --no-backup-if-mismatch <"$patches/$name" >/dev/null 2>&1 || true
	printf 'version=%s\nindex=%s\npatch=%s\n' "$version" "$i" "$name" >"$state/state"
	keep=1
	{
		echo "gvisor.sh: $name (number $((i + 1)) of ${#SERIES[@]} in the series) does not apply to $upstream@$version without fuzz:"
		echo "$out" | sed 's/^/    /'
		echo "gvisor.sh: the tree, with the patches before it and the hunks of it that applied, is kept in"
		echo "    $state/gvisor"
		echo "  rejected hunks:"
		(cd "$state/gvisor" && find . -name '*.rej' | sed 's#^\./#    '"$state/gvisor/"'#' | sort)
		echo "  Apply them by hand there, delete the .rej files, then run"
		echo "    internal/third_party/gvisor.sh -resume $state"
		echo "  to rewrite $name from the fixed tree and apply the rest of the series."
	} >&2
	exit 1
}

# build DEST: pristine plus the whole series.
build() {
	pristine "$1"
	apply "$1" 0
}

# diffs A B: the unified diff from tree A to tree B, without timestamps
# (a patch's text depends only on its change). Fails if there is none.
diffs() {
	local out rc=0
	out=$(cd "$work" && diff -ruN "$1" "$2") || rc=$?
	[ $rc -ne 2 ] || die "diff $1 $2 failed"
	[ $rc -eq 1 ] || return 1
	# diff names the trees a and b whatever they are called here.
	sed -e 's#^\(---\|+++\) \([^\t]*\)\t.*#\1 \2#' \
		-e "s#^diff -ruN $1/\\([^ ]*\\) $2/#diff -ruN a/\\1 b/#" \
		-e "s#^--- $1/#--- a/#" -e "s#^+++ $2/#+++ b/#" <<<"$out"
}

# writepatch FILE HEADER DIFF: a patch is its header, a blank line, and
# its diff (none for an overlay-only patch).
writepatch() {
	if [ -n "$3" ]; then printf '%s\n\n%s\n' "$2" "$3" >"$1"; else printf '%s\n' "$2" >"$1"; fi
}
# header PATCH: the patch's text before its diff (used inside $(...), which
# drops the blank line that separates them).
header() { sed '/^diff -ruN/,$d' "$1"; }

# keep_overlay_edits: an overlay file edited in the copy is ours to keep:
# copy it back into the overlay before anything rebuilds the copy.
keep_overlay_edits() {
	local name f
	for name in "${SERIES[@]}"; do
		for f in $(overlay_files "$name"); do
			if [ -f "$copy/$f" ] && ! cmp -s "$copy/$f" "$overlay/${name%.patch}/$f"; then
				cp "$copy/$f" "$overlay/${name%.patch}/$f"
				echo "gvisor.sh: kept the copy's edit of $f in gvisor-overlay/${name%.patch}/$f"
			fi
		done
	done
}

# strip_overlay DIR: remove every overlay file from a tree, so diffs of
# trees see only what patches change.
strip_overlay() { local f; for f in $(all_overlay_files); do rm -f "$1/$f"; done; }

# new_to_overlay NAME A B: files B has and A lacks move from B to patch
# NAME's overlay (new files of ours are carried whole, not as diffs).
new_to_overlay() {
	local name=${1%.patch} a=$2 b=$3 f
	for f in $(cd "$work/$b" && find . -type f | sed 's#^\./##' | sort); do
		[ -e "$work/$a/$f" ] && continue
		mkdir -p "$(dirname "$overlay/$name/$f")"
		mv "$work/$b/$f" "$overlay/$name/$f"
		echo "gvisor.sh: $f is new: carried as gvisor-overlay/$name/$f"
	done
}

install_copy() {
	rm -rf "$copy"
	mv "$1" "$copy"
	echo "gvisor.sh: $copy is $upstream@$version plus ${#SERIES[@]} patches"
}

read_series
case "${1:-}" in
"")
	keep_overlay_edits
	build "$work/gvisor"
	install_copy "$work/gvisor"
	;;
-check)
	build "$work/gvisor"
	if ! diff -r "$work/gvisor" "$copy" >"$work/diff"; then
		head -100 "$work/diff"
		die "internal/third_party/gvisor differs from $upstream@$version plus the series (edit through a patch or the overlay: see the script's header)"
	fi
	echo "gvisor.sh: the copy equals $upstream@$version plus the ${#SERIES[@]} patches of the series and their overlay files"
	;;
-check-upstream)
	# The upstream-marked prefix alone on pristine upstream. A patch that
	# stops here stops as in any run: -resume rewrites it against the
	# prefix and applies the rest of the series after it.
	[ "$UPSTREAM" -gt 0 ] || die "the series marks no patch upstream"
	pristine "$work/gvisor"
	apply "$work/gvisor" 0 "$UPSTREAM"
	# Build the result in the copy's place, in ustack's module (so no
	# module is downloaded): go build's -overlay reads the prefix's Go
	# files over the copy's, and hides the copy's files the prefix lacks.
	{
		echo '{"Replace": {'
		sep=
		for f in $({ (cd "$work/gvisor" && find . -name '*.go') && (cd "$copy" && find . -name '*.go'); } | sed 's#^\./##' | sort -u); do
			r=
			[ ! -f "$work/gvisor/$f" ] || r=$work/gvisor/$f
			printf '%s"%s": "%s"\n' "$sep" "$copy/$f" "$r"
			sep=,
		done
		echo '}}'
	} >"$work/overlay.json"
	go build -overlay "$work/overlay.json" ./internal/third_party/gvisor/... ||
		die "upstream plus the $UPSTREAM upstream-marked patches does not build"
	# And passes upstream's tests: a fix upstream could take keeps them.
	tests=()
	for p in "${TEST_PKGS[@]}"; do tests+=("./internal/third_party/gvisor/$p"); done
	go test -count=1 -overlay "$work/overlay.json" "${tests[@]}" ||
		die "upstream plus the $UPSTREAM upstream-marked patches fails upstream's tests"
	echo "gvisor.sh: the $UPSTREAM patches marked upstream apply to $upstream@$version without any patch of ours; the result builds and passes upstream's tests"
	;;
-vet)
	# go vet sees overlay files where they compile: in the copy's
	# packages. Upstream's files there draw vet findings of their own
	# (unkeyed fields), so only findings in overlay files count.
	files=$(all_overlay_files | grep '\.go$' || true)
	[ -n "$files" ] || { echo "gvisor.sh: no overlay Go files to vet"; exit 0; }
	pkgs=$(for f in $files; do echo "./internal/third_party/gvisor/$(dirname "$f")"; done | sort -u)
	# shellcheck disable=SC2086
	go vet -json $pkgs >"$work/vet" 2>&1 || { cat "$work/vet"; die "go vet failed on $(echo $pkgs)"; }
	found=$(for f in $files; do
		awk -v f="/internal/third_party/gvisor/$f:" '
			index($0, "\"posn\":") { p = index($0, f) ? $2 : ""; gsub(/[",]/, "", p) }
			index($0, "\"message\":") && p != "" { m = $0; sub(/^[ \t]*"message": /, "", m); sub(/,$/, "", m); print p ": " m; p = "" }
		' "$work/vet"
	done)
	if [ -n "$found" ]; then
		echo "$found"
		die "go vet reports the above in overlay files"
	fi
	echo "gvisor.sh: go vet finds nothing in the $(echo "$files" | wc -l) overlay Go files ($(echo $pkgs))"
	;;
-mkpatch)
	name=${2:-}
	[[ "$name" =~ ^[a-z0-9-]+$ ]] || die "-mkpatch needs a name of lowercase letters, digits and dashes"
	keep_overlay_edits
	build "$work/a"
	cp -a "$copy" "$work/b"
	strip_overlay "$work/a"
	strip_overlay "$work/b"
	# The next number after the highest in use.
	n=$(printf '%s\n' "${SERIES[@]}" | cut -c1-4 | sort -n | tail -1)
	file=$(printf '%04d-%s.patch' $((10#${n:-0} + 1)) "$name")
	new_to_overlay "$file" a b
	d=$(diffs a b) || d=
	[ -n "$d" ] || [ -d "$overlay/${file%.patch}" ] || die "no difference to make a patch of"
	writepatch "$patches/$file" "$(printf 'Subject: %s\n\nWhat: \nWhy: \nTest: ' "$name")" "$d"
	echo "$file" >>"$series"
	echo "gvisor.sh: wrote gvisor-patches/$file and appended it to the series; fill in its header and move its line to its section (run -check after)"
	;;
-amend)
	num=${2:-}
	target=
	for p in "${SERIES[@]}"; do [[ "$p" == "$num"-* ]] && target=$p; done
	[[ "$num" =~ ^[0-9]{4}$ && -n "$target" ]] || die "-amend needs the number of a patch in the series (NNNN)"
	keep_overlay_edits
	for ((t = 0; t < ${#SERIES[@]}; t++)); do [ "${SERIES[$t]}" = "$target" ] && break; done
	# The copy as edited, with the patches after NNNN taken back out.
	cp -a "$copy" "$work/b"
	for ((i = ${#SERIES[@]} - 1; i > t; i--)); do
		has_diff "$patches/${SERIES[$i]}" || continue
		patch -s -R --fuzz=0 -p1 -d "$work/b" --no-backup-if-mismatch <"$patches/${SERIES[$i]}" ||
			die "${SERIES[$i]} does not reverse from the edited copy: amend by hand"
	done
	# Upstream with the patches before NNNN.
	pristine "$work/a"
	apply "$work/a" 0 "$t"
	strip_overlay "$work/a"
	strip_overlay "$work/b"
	new_to_overlay "$target" a b
	d=$(diffs a b) || d=
	[ -n "$d" ] || [ -d "$overlay/${target%.patch}" ] || die "patch $num would be empty"
	writepatch "$patches/$target" "$(header "$patches/$target")" "$d"
	echo "gvisor.sh: amended gvisor-patches/$target; run gvisor.sh -check"
	;;
-refresh)
	pristine "$work/gvisor"
	for ((i = 0; i < ${#SERIES[@]}; i++)); do
		name=${SERIES[$i]}
		rm -rf "$work/before" "$work/after"
		cp -a "$work/gvisor" "$work/before"
		apply "$work/gvisor" "$i" $((i + 1))
		has_diff "$patches/$name" || continue
		cp -a "$work/gvisor" "$work/after"
		strip_overlay "$work/before"
		strip_overlay "$work/after"
		d=$(diffs before after) || die "$name changes nothing"
		new=$(printf '%s\n\n%s' "$(header "$patches/$name")" "$d")
		if [ "$new" != "$(cat "$patches/$name")" ]; then
			printf '%s\n' "$new" >"$patches/$name"
			echo "gvisor.sh: refreshed $name"
		fi
	done
	echo "gvisor.sh: every patch in the series applies exactly; run gvisor.sh -check"
	;;
-resume)
	dir=${2:-}
	[ -f "$dir/state" ] || die "-resume needs the work directory a stopped run printed"
	v=$(sed -n 's/^version=//p' "$dir/state")
	i=$(sed -n 's/^index=//p' "$dir/state")
	name=$(sed -n 's/^patch=//p' "$dir/state")
	[ "$v" = "$version" ] || die "$dir was made for $upstream@$v, bench/go.mod now pins $version: start again"
	[ "${SERIES[$i]:-}" = "$name" ] || die "the series has changed since $dir was made ($name is no longer number $((i + 1))): start again"
	rej=$(cd "$dir/gvisor" && find . -name '*.rej' -o -name '*.orig' | sort)
	[ -z "$rej" ] || die "$dir/gvisor still holds rejects or backups: $(echo $rej)"
	rm -rf "$work"
	work=$dir
	d=$(diffs before gvisor) || die "$dir/gvisor is unchanged from the tree before $name: apply its hunks there first"
	writepatch "$patches/$name" "$(header "$patches/$name")" "$d"
	echo "gvisor.sh: rewrote $name from $dir/gvisor"
	# Its overlay, then the rest of the series.
	for f in $(overlay_files "$name"); do
		mkdir -p "$(dirname "$dir/gvisor/$f")"
		cp "$overlay/${name%.patch}/$f" "$dir/gvisor/$f"
	done
	keep=1
	apply "$dir/gvisor" $((i + 1))
	install_copy "$dir/gvisor"
	keep=
	echo "gvisor.sh: the series applies; run gvisor.sh -check and ustack's tests"
	;;
*)
	die "usage: gvisor.sh [-check | -check-upstream | -vet | -table | -mkpatch NAME | -amend NNNN | -refresh | -resume DIR]"
	;;
esac
