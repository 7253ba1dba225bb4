#!/bin/bash
# In two guests (buildlib/testbed/run.sh --two): each one waits here until
# the other got here too, at most SECONDS (default 600). One pair of
# guests runs several scripts in turn (tests/run.sh), and a script whose
# client retries for some seconds must not start long before its server.
# usage: meet.sh NAME a|b [SECONDS]
. "$(dirname "$0")/lib.sh"
name=${1:?usage: meet.sh NAME a|b [SECONDS]}
case ${2:-} in
a) other=b ;;
b) other=a ;;
*) echo "usage: meet.sh NAME a|b [SECONDS]" >&2; exit 2 ;;
esac
SYNC=$LOGDIR/meet-sync/${MIGR_RUN:-0}
mkdir -p "$SYNC"
say "$name.$2"
await "$name.$other" "${3:-600}"
