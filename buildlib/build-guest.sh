#!/bin/bash
# Build the fork for the Debian 13 guest inside the Debian 13 build root
# (buildlib/buildroot.sh): IN_PLACE at build/trixie, pyverbs for the guest's
# Python. The repo is mounted at the same path in the build root and in the
# guest, so the build's RPATHs and config paths hold in both.
# usage: buildlib/build-guest.sh [ninja args...]
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"

"$MIGR_TOP/buildlib/upstream.sh" >/dev/null
"$MIGR_TOP/buildlib/buildroot.sh" ensure

# IN_PLACE puts run-time files (ibacm's socket) under the build directory,
# whose path may not fit a socket address (108 bytes) from a deep clone:
# /run instead. cmake finds /usr/bin/cc, not ccache's gcc first in PATH:
# the launcher says it (two thirds of the build's CPU time were compiles
# that a clean clone's build had made before).
out=$MIGR_BUILD/trixie
if [ ! -f "$out/build.ninja" ]; then
	"$MIGR_TOP/buildlib/buildroot.sh" run cmake -S "$MIGR_TOP" -B "$out" -GNinja \
		-DIN_PLACE=1 -DCMAKE_BUILD_TYPE=RelWithDebInfo \
		-DCMAKE_INSTALL_RUNDIR=/run -DCMAKE_C_COMPILER_LAUNCHER=ccache \
		-DPYTHON_EXECUTABLE=/usr/bin/python3 >"$out.cmake.log" 2>&1 ||
		{ tail -20 "$out.cmake.log" >&2; die "cmake failed (log: $out.cmake.log)"; }
fi
"$MIGR_TOP/buildlib/buildroot.sh" run ninja -C "$out" "$@"
