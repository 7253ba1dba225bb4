#!/bin/bash
# Fast build of the fork on this (Debian 12) host, for C unit tests and
# compile checks: IN_PLACE, no pyverbs (the guest's Python differs).
# usage: buildlib/build-host.sh [--tests] [ninja args...]
#   --tests  only what the unit tests (ctest) run, and what it links: the
#            test programs, migrd and peer_client (tests/run.sh; the guest
#            build compiles everything, for Debian 13)
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
if [ "${1:-}" = --tests ]; then
	shift
	# every program a test's command names in the build tree (as cmake
	# wrote them in CTestTestfile.cmake: ctest itself names only programs
	# that exist already)
	mapfile -t targets < <(find "$out" -name CTestTestfile.cmake -exec grep -h '^add_test(' {} + |
		grep -o "\"$out/[^\"]*\"" | tr -d '"' | sed "s|^$out/||" | sort -u)
	[ ${#targets[@]} -gt 0 ] || die "ctest lists no test program in $out"
	set -- "${targets[@]}" "$@"
fi
ninja -C "$out" "$@"
