#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0 OR Linux-OpenIB
"""The provider's floors (docs/architecture.md, "Floors"): a file includes
headers of its own floor and of the floors below only. The floors, bottom
first, are MIGR_PROVIDER_INCLUDE_SUBDIRS in migr_sources.cmake; common/
is below them all, device.c (the provider's entry) above them all.

usage: floors.py PROVIDER_DIR COMMON_DIR
Prints every include that runs back up and exits 1 if there is one.
"""
import os
import re
import sys


def floors_of(provider):
    text = open(os.path.join(provider, "migr_sources.cmake")).read()
    m = re.search(r"set\(MIGR_PROVIDER_INCLUDE_SUBDIRS ([^)]*)\)", text)
    if not m:
        sys.exit("floors.py: no MIGR_PROVIDER_INCLUDE_SUBDIRS in migr_sources.cmake")
    return m.group(1).split()


def main():
    provider, common = sys.argv[1], sys.argv[2]
    names = floors_of(provider)
    # rank: common/ 0, the floors 1..n, the top (device.c) n+1
    rank = {os.path.abspath(common): 0}
    for i, d in enumerate(names):
        rank[os.path.abspath(os.path.join(provider, d))] = i + 1
    top = os.path.abspath(provider)
    rank[top] = len(names) + 1
    header_floor = {}
    for d in rank:
        for f in os.listdir(d):
            if f.endswith(".h"):
                if f in header_floor:
                    sys.exit("floors.py: %s in two floors" % f)
                header_floor[f] = d
    up, files = [], 0
    for d in rank:
        for f in sorted(os.listdir(d)):
            if not f.endswith((".c", ".h")):
                continue
            files += 1
            for n, line in enumerate(open(os.path.join(d, f)), 1):
                m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
                if not m:
                    continue
                to = header_floor.get(os.path.basename(m.group(1)))
                if to and rank[to] > rank[d]:
                    up.append("%s:%d includes %s (%s, above %s)" % (
                        os.path.relpath(os.path.join(d, f), top), n,
                        m.group(1), os.path.relpath(to, top),
                        os.path.relpath(d, top)))
    for u in up:
        print("runs back up:", u)
    print("floors.py: %d files on %d floors, %d includes running back up"
          % (files, len(rank), len(up)))
    return 1 if up else 0


if __name__ == "__main__":
    sys.exit(main())
