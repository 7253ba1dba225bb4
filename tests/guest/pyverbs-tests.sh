#!/bin/bash
# In the guest: migr's own pytest suite (pyverbs-tests/) over the twin.
. "$(dirname "$0")/lib.sh"
cd "$MIGR_TOP" || exit 1
exec timeout 1000 python3 -m pytest -q -p no:cacheprovider pyverbs-tests "$@"
