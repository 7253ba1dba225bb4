#!/bin/bash
# In the guest: the stacked device is listed and usable by the standard
# tools and by unmodified third-party programs (perftest, librdmacm's
# rping and ucmatose), over the migr twin of the first real device.
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

run_perf() { # name tool extra-args
	local name=$1 tool=$2; shift 2
	export VERBS_LOG_FILE=$LOGDIR/$name.verbs.log
	rm -f "$VERBS_LOG_FILE"
	PAIR_PORT=18515 pair "$name" "$tool -d $DEV -x $GIDX $*" "$tool -d $DEV -x $GIDX $* 127.0.0.1"
	opened_migr "$VERBS_LOG_FILE" || fail "$name-used-migr" "$VERBS_LOG_FILE"
}

for api in new old; do
	flag=""; [ $api = old ] && flag=--use_old_post_send
	run_perf "ib_send_bw_$api" ib_send_bw -n 200 -s 4096 $flag
	run_perf "ib_write_bw_$api" ib_write_bw -n 200 -s 65536 $flag
	run_perf "ib_read_bw_$api" ib_read_bw -n 200 -s 65536 $flag
	run_perf "ib_atomic_bw_$api" ib_atomic_bw -n 200 $flag
	run_perf "ib_send_lat_$api" ib_send_lat -n 200 $flag
done

# librdmacm picks the device listed first among those sharing a GUID: the
# real device by default, the twin when twins are listed first.
export VERBS_LOG_FILE=$LOGDIR/rping_after.verbs.log
rm -f "$VERBS_LOG_FILE"
PAIR_CM=1 pair rping_after "rping -s -a $IP -C 5 -v" "rping -c -a $IP -C 5 -v"
if opened_migr "$VERBS_LOG_FILE"; then fail rping_after_used_real "$VERBS_LOG_FILE"; fi

export RDMAV_STACKED_DEVICES=first
export VERBS_LOG_FILE=$LOGDIR/rping.verbs.log
rm -f "$VERBS_LOG_FILE"
PAIR_CM=1 pair rping_first "rping -s -a $IP -C 20 -v" "rping -c -a $IP -C 20 -v"
opened_migr "$VERBS_LOG_FILE" || fail rping_used_migr "$VERBS_LOG_FILE"
export VERBS_LOG_FILE=$LOGDIR/ucmatose.verbs.log
rm -f "$VERBS_LOG_FILE"
PAIR_CM=1 pair ucmatose_first "ucmatose" "ucmatose -s $IP"
opened_migr "$VERBS_LOG_FILE" || fail ucmatose_used_migr "$VERBS_LOG_FILE"
unset RDMAV_STACKED_DEVICES VERBS_LOG_FILE

summary stacking
