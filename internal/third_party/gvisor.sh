#!/usr/bin/env bash
# Recreates internal/third_party/gvisor, ustack's copy of gVisor's netstack:
# the packages ustack needs (ROOTS and everything they import), taken from
# the gvisor.dev/gvisor module at the version go.mod pins, renamed into
# ustack's module path, gofmt'ed, then patched with gvisor-patches/*.patch
# in order.
#
#   internal/third_party/gvisor.sh            rewrite the copy
#   internal/third_party/gvisor.sh -check     fail if the copy differs from
#                                             upstream plus the patches (CI)
#   internal/third_party/gvisor.sh -mkpatch NAME
#                                             write the difference between
#                                             the copy as edited and upstream
#                                             plus the existing patches as the
#                                             next patch, gvisor-patches/NNNN-NAME.patch
#
# To change netstack: edit files under internal/third_party/gvisor, run
# -mkpatch, write the patch's header (what, why, which test), run the script
# once more and commit the copy and the patch together.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
top="$(cd "$here/../.." && pwd)"
cd "$top"

upstream=gvisor.dev/gvisor
ours=github.com/ustack-dev/ustack/internal/third_party/gvisor
copy="$here/gvisor"
patches="$here/gvisor-patches"

# The packages ustack imports; their dependencies come along.
ROOTS=(
	pkg/buffer
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
# Platforms whose dependency sets are unioned, so the copy builds (and
# go vet runs) wherever ustack does.
PLATFORMS=(linux/amd64 linux/arm64 darwin/arm64 windows/amd64 freebsd/amd64)

die() { echo "gvisor.sh: $*" >&2; exit 1; }

version=$(go list -m -f '{{.Version}}' "$upstream") || die "go.mod does not require $upstream"
src=$(go mod download -json "$upstream@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[ -d "$src" ] || die "could not download $upstream@$version"

# pristine DEST: upstream's packages, renamed and formatted, no patches.
pristine() {
	local dest=$1 pkgs=() p os arch
	for p in "${ROOTS[@]}"; do pkgs+=("$upstream/$p"); done
	local list
	list=$(for p in "${PLATFORMS[@]}"; do
		os=${p%/*} arch=${p#*/}
		GOOS=$os GOARCH=$arch go list -deps "${pkgs[@]}"
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
	find "$dest" -name '*.go' -exec sed -i "s#\"$upstream/pkg/#\"$ours/pkg/#g" {} +
	gofmt -w "$dest"
	cp "$src/LICENSE" "$dest/LICENSE"
	chmod u+w "$dest/LICENSE"
	{
		echo "This is a copy of gVisor's netstack, carried by ustack."
		echo
		echo "Origin:   $upstream $version (Apache License 2.0, see LICENSE)"
		echo "Packages: $(echo "$list" | wc -l), the dependencies of ${ROOTS[*]}"
		echo "Renamed:  $upstream/pkg/... -> $ours/pkg/..."
		echo
		echo "Do not edit these files in place: internal/third_party/gvisor.sh"
		echo "recreates them from upstream plus the patches in"
		echo "internal/third_party/gvisor-patches, and CI checks that they match."
	} >"$dest/ORIGIN"
}

# build DEST: pristine plus every patch.
build() {
	local dest=$1 p
	pristine "$dest"
	for p in "$patches"/*.patch; do
		[ -e "$p" ] || continue
		patch -s -p1 -d "$dest" --no-backup-if-mismatch <"$p" || die "patch $(basename "$p") does not apply"
	done
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

case "${1:-}" in
"")
	build "$tmp/gvisor"
	rm -rf "$copy"
	mv "$tmp/gvisor" "$copy"
	echo "gvisor.sh: $copy is $upstream@$version plus $(ls "$patches"/*.patch 2>/dev/null | wc -l) patches"
	;;
-check)
	build "$tmp/gvisor"
	if ! diff -r "$tmp/gvisor" "$copy" >"$tmp/diff"; then
		head -100 "$tmp/diff"
		die "internal/third_party/gvisor differs from $upstream@$version plus gvisor-patches (edit through a patch: see the script's header)"
	fi
	echo "gvisor.sh: the copy equals $upstream@$version plus $(ls "$patches"/*.patch 2>/dev/null | wc -l) patches"
	;;
-mkpatch)
	name=${2:-}
	[[ "$name" =~ ^[a-z0-9-]+$ ]] || die "-mkpatch needs a name of lowercase letters, digits and dashes"
	build "$tmp/a"
	n=$( (ls "$patches"/*.patch 2>/dev/null || true) | wc -l)
	out=$(printf '%s/%04d-%s.patch' "$patches" $((n + 1)) "$name")
	mkdir -p "$patches"
	(cd "$tmp" && ln -s "$copy" b && diff -ruN a b/ >"$tmp/patch") && die "no difference to make a patch of"
	{
		echo "Subject: $name"
		echo
		echo "What: "
		echo "Why: "
		echo "Test: "
		echo
		sed -e 's#^\(---\|+++\) \([ab]\)/*#\1 \2/#' "$tmp/patch"
	} >"$out"
	echo "gvisor.sh: wrote $out; fill in its header"
	;;
*)
	die "usage: gvisor.sh [-check | -mkpatch NAME]"
	;;
esac
