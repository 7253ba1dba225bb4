#!/bin/bash
# In two guests joined by a UDP-socket link (buildlib/testbed/run.sh --two):
# perftest, rping and migr-traffic (tests/traffic: every WR and byte
# verified) between two hosts, both ends on their migr twins.
# usage: two-host.sh server|client
. "$(dirname "$0")/lib.sh"
role=${1:?server or client}
DEV=migr_rxe0
SERVER_IP=10.9.0.1
export VERBS_LOG_LEVEL=3 VERBS_LOG_FILE=$LOGDIR/two-host-$role.verbs.log
rm -f "$VERBS_LOG_FILE"
# All ops, legacy and ibv_wr_* posting alternating, SRQ, UD, events. The
# emulated link between the guests drops datagrams when RC traffic fills
# it: unloaded 2-5% of UD messages are lost, more on a busy host. UD is
# here to check its translation, not the link: up to 20% may go.
TRAFFIC_ARGS="--qps 2 --srq --ud --ud-max-loss 20 --api mixed --mode event --duration 3 --stall-timeout 30"

if [ "$role" = server ]; then
	check two_host_write_bw_server ib_write_bw -d $DEV -x 1 -n 200 -s 65536
	check two_host_send_lat_server ib_send_lat -d $DEV -x 1 -n 200
	RDMAV_STACKED_DEVICES=first check two_host_rping_server rping -s -a $SERVER_IP -C 20
	t=$SECONDS
	check two_host_traffic_server migr-traffic -d $DEV --server $TRAFFIC_ARGS
	echo "    migr-traffic server: $((SECONDS - t)) s"
else
	# The link comes up a little after boot; perftest servers need a moment
	i=0; until ping -c1 -W1 $SERVER_IP >/dev/null 2>&1; do i=$((i + 1)); [ $i -gt 60 ] && break; done
	# retry CMD: the server of the next test may still be starting
	retry() { echo "for i in \$(seq 20); do $* && exit 0; sleep 1; done; exit 1"; }
	check two_host_write_bw bash -c "$(retry ib_write_bw -d $DEV -x 1 -n 200 -s 65536 $SERVER_IP)"
	check two_host_send_lat bash -c "$(retry ib_send_lat -d $DEV -x 1 -n 200 $SERVER_IP)"
	RDMAV_STACKED_DEVICES=first check two_host_rping bash -c "$(retry rping -c -a $SERVER_IP -C 20)"
	# No retry: a failed check must not be masked; the client waits for
	# the server's port instead.
	t=$SECONDS
	check two_host_traffic migr-traffic -d $DEV --client $SERVER_IP --connect-timeout 60 $TRAFFIC_ARGS
	echo "    migr-traffic client: $((SECONDS - t)) s"
fi
tlog=$LOGDIR/two_host_traffic$([ "$role" = server ] && echo _server).log
grep -h "^migr-traffic: " "$tlog" | sed 's/^/    /'

grep -q "$DEV: .*opened over rxe0" "$VERBS_LOG_FILE" && pass two_host_used_migr_$role ||
	fail two_host_used_migr_$role "$VERBS_LOG_FILE"
summary "two-host $role"
