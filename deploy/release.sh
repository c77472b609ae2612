#!/bin/sh
# Release binaries: `task release` runs this. It cross-builds yukta with plain
# `go build` (static: CGO_ENABLED=0, -trimpath, the version stamped with
# -ldflags -X) for each target into DIST (default dist/), writes SHA256SUMS
# there, checks the sums, and runs the binary built for this machine, if
# any, to see that it prints its version.
#
#   deploy/release.sh                      # the four targets below
#   deploy/release.sh linux/amd64          # only these
#   VERSION=v1.2.3 DIST=/tmp/out deploy/release.sh
set -eu
cd "$(dirname "$0")/.."

TARGETS=${*:-linux/amd64 linux/arm64 darwin/amd64 darwin/arm64}
VERSION=${VERSION:-$(git describe --tags --always --dirty 2>/dev/null || echo dev)}
DIST=${DIST:-dist}

mkdir -p "$DIST"
# Only what an earlier run left: DIST may be any folder.
rm -f "$DIST"/yukta-* "$DIST/SHA256SUMS"
for t in $TARGETS; do
	os=${t%/*}
	arch=${t#*/}
	out="$DIST/yukta-$VERSION-$os-$arch"
	echo "release: $out"
	CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath \
		-ldflags "-X github.com/yukta/yukta/bootstrap.Version=$VERSION" -o "$out" .
done

cd "$DIST"
if command -v sha256sum >/dev/null 2>&1; then
	sum() { sha256sum "$@"; }
else
	sum() { shasum -a 256 "$@"; } # macOS
fi
# shellcheck disable=SC2046 # the names hold no spaces
sum $(ls yukta-*) >SHA256SUMS
sum -c SHA256SUMS >/dev/null

self="yukta-$VERSION-$(go env GOOS)-$(go env GOARCH)"
if [ -x "$self" ]; then
	./"$self" version
fi
echo "release: $VERSION, $(wc -l <SHA256SUMS | tr -d ' ') binaries in $DIST with SHA256SUMS"
