#!/bin/bash
# Fast build of the fork on this (Debian 12) host, for C unit tests and
# compile checks: IN_PLACE, no pyverbs (the guest's Python differs).
# usage: buildlib/build-host.sh [ninja args...]
set -euo pipefail
. "$(dirname "$0")/lib/common.sh"

apt_install cmake ninja-build pkgconf gcc libnl-3-dev libnl-route-3-dev libssl-dev libjansson-dev \
	libudev-dev libsystemd-dev pandoc python3-docutils curl ca-certificates patch ccache
mapfile -t cc < <(ccache_vars host)
export "${cc[@]}"

# IN_PLACE puts run-time files (ibacm's socket) under the build directory,
# whose path may not fit a socket address (108 bytes) from a deep clone:
# /run instead.
out=$MIGR_BUILD/host
if [ ! -f "$out/build.ninja" ]; then
	cmake -S "$MIGR_TOP" -B "$out" -GNinja -DIN_PLACE=1 -DNO_PYVERBS=1 \
		-DCMAKE_INSTALL_RUNDIR=/run -DCMAKE_C_COMPILER_LAUNCHER=ccache \
		-DPYTHON_EXECUTABLE=/usr/bin/python3 >"$out.cmake.log" 2>&1 ||
		{ tail -20 "$out.cmake.log" >&2; die "cmake failed (log: $out.cmake.log)"; }
fi
ninja -C "$out" "$@"
