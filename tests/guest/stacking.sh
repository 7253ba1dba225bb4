#!/bin/bash
# In the guest: the stacked device is listed and usable by the standard
# tools and by unmodified third-party programs (perftest, rdma-core's
# pingpong examples, librdmacm's examples and rsockets), over the migr
# twin of the first real device.
. "$(dirname "$0")/lib.sh"
LOWER=${MIGR_LOWER_DEV:-rxe0}
DEV=migr_$LOWER
GIDX=${MIGR_GID_INDEX:-1}
IP=${MIGR_IP:-10.0.0.1}

# A verbs log proves which device a program really opened.
opened_migr() { grep -q "$DEV: .*opened over $LOWER" "$1"; }
export VERBS_LOG_LEVEL=3

check devices_lists_twin sh -c "ibv_devices | grep -qw $DEV && ibv_devices | grep -qw $LOWER"
check devinfo_twin ibv_devinfo -d "$DEV"
check devinfo_equal bash -c "diff <(ibv_devinfo -v -d $LOWER | sed 1d) <(ibv_devinfo -v -d $DEV | sed 1d)"

# on_twin NAME SERVER CLIENT: pair() (PAIR_PORT or PAIR_CM as the caller
# sets them) with a verbs log of its own, which must show the twin opened
on_twin() {
	export VERBS_LOG_FILE=$LOGDIR/$1.verbs.log
	rm -f "$VERBS_LOG_FILE"
	pair "$@"
	opened_migr "$VERBS_LOG_FILE" || fail "$1-used-migr" "$VERBS_LOG_FILE"
}

run_perf() { # name tool extra-args
	local name=$1 tool=$2; shift 2
	PAIR_PORT=18515 on_twin "$name" "$tool -d $DEV -x $GIDX $*" "$tool -d $DEV -x $GIDX $* 127.0.0.1"
}

for api in new old; do
	flag=""; [ $api = old ] && flag=--use_old_post_send
	run_perf "ib_send_bw_$api" ib_send_bw -n 200 -s 4096 $flag
	run_perf "ib_write_bw_$api" ib_write_bw -n 200 -s 65536 $flag
	run_perf "ib_read_bw_$api" ib_read_bw -n 200 -s 65536 $flag
	run_perf "ib_atomic_bw_$api" ib_atomic_bw -n 200 $flag
	run_perf "ib_send_lat_$api" ib_send_lat -n 200 $flag
done
run_perf ib_write_lat ib_write_lat -n 200
run_perf ib_read_lat ib_read_lat -n 200
run_perf ib_send_bw_ud ib_send_bw -c UD -n 200
run_perf ib_send_lat_ud ib_send_lat -c UD -n 200

# rdma-core's own examples: UD and UC pingpong (its RC and SRQ ones run
# switched live in unmodified.sh); XRC is left out, rxe has none
for pp in ibv_ud_pingpong ibv_uc_pingpong; do
	PAIR_PORT=18515 on_twin $pp "$pp -d $DEV -g $GIDX -n 200" "$pp -d $DEV -g $GIDX -n 200 127.0.0.1"
done

# librdmacm picks the device listed first among those sharing a GUID: the
# real device by default, the twin when twins are listed first.
export VERBS_LOG_FILE=$LOGDIR/rping_after.verbs.log
rm -f "$VERBS_LOG_FILE"
PAIR_CM=1 pair rping_after "rping -s -a $IP -C 5 -v" "rping -c -a $IP -C 5 -v"
if opened_migr "$VERBS_LOG_FILE"; then fail rping_after_used_real "$VERBS_LOG_FILE"; fi

export RDMAV_STACKED_DEVICES=first
PAIR_CM=1 on_twin rping_first "rping -s -a $IP -C 20 -v" "rping -c -a $IP -C 20 -v"
PAIR_CM=1 on_twin ucmatose_first "ucmatose" "ucmatose -s $IP"
# librdmacm's other examples and rsockets (its own protocol over RDMA
# WRITE with immediate, inline data), on the twin listed first
PAIR_CM=1 on_twin ucmatose_8 "ucmatose -c 8 -C 50" "ucmatose -s $IP -c 8 -C 50"
PAIR_CM=1 on_twin udaddy udaddy "udaddy -s $IP"
PAIR_CM=1 on_twin rdma_server rdma_server "rdma_client -s $IP"
PAIR_CM=1 on_twin rdma_xserver rdma_xserver "rdma_xclient -s $IP"
PAIR_CM=1 on_twin rstream "rstream -b $IP -S 4096 -C 100 -T v" "rstream -s $IP -S 4096 -C 100 -T v"
PAIR_CM=1 on_twin riostream "riostream -b $IP -S 4096 -C 100" "riostream -s $IP -S 4096 -C 100"
# multicast: a receiver joins, a sender sends. Nothing tells when the join
# is done (the receiver's output is buffered), and what is sent before it
# is lost: the sender sends its 20 datagrams several times over. The
# first group joined on a fresh rxe now and then receives nothing at all,
# on rxe0 without migr too: a receiver that waits 40 s in vain is run
# once more (a second failure counts).
PAIR_RETRY=1 on_twin mckey "timeout 40 mckey -m 239.1.1.1 -b $IP -C 20" \
	"for i in 1 2 3 4 5 6; do mckey -m 239.1.1.1 -b $IP -s -C 20 || exit 1; sleep 1; done"
unset RDMAV_STACKED_DEVICES VERBS_LOG_FILE

summary stacking
