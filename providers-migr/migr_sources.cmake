# The migr provider's sources and include directories, in one place: read
# by this directory's CMakeLists.txt (the provider), by the unit tests'
# static library of the provider (tests/unit) and by the benchmark's
# shared object (bench). Paths are relative to this directory.
set(MIGR_PROVIDER_SOURCES
  agent/agent.c
  agent/contexts.c
  agent/control.c
  agent/control_ops.c
  agent/fence.c
  agent/migrd_call.c
  agent/register.c
  datapath/cq.c
  datapath/cq_ex.c
  datapath/cq_watch.c
  datapath/marker.c
  datapath/mw_track.c
  datapath/peer.c
  datapath/post.c
  datapath/qp_ex.c
  datapath/qp_ex_hold.c
  datapath/queue_owner.c
  datapath/quiesce.c
  datapath/ring.c
  datapath/rlog.c
  datapath/shadow.c
  datapath/slog.c
  datapath/u32map.c
  datapath/xlate.c
  partner/partner_call.c
  partner/partner_fetch.c
  partner/partner_follow.c
  partner/partner_keys.c
  partner/partner_line.c
  partner/partner_serve.c
  partner/partner_session.c
  partner/partner_steps.c
  switch/dm_switch.c
  switch/mw_switch.c
  switch/park.c
  switch/qp_phase.c
  switch/rebuild.c
  switch/replay.c
  switch/srq_switch.c
  switch/switch.c
  switch/switch_check.c
  switch/switch_drain.c
  ud/ud_announce.c
  ud/ud_redirect.c
  ud/ud_serve.c
  ud/ud_switch.c
  verbs/ah.c
  verbs/device.c
  verbs/events.c
  verbs/flow.c
  verbs/gid.c
  verbs/mr.c
  verbs/mr_mark.c
  verbs/numbers.c
  verbs/pd.c
  verbs/qp.c
  verbs/quirks.c
  verbs/record.c
  verbs/srq.c
  verbs/wq.c
  )
# Every header is included by its name alone: migr.h and clock.h at the
# top, the others in their layer's folder.
set(MIGR_PROVIDER_INCLUDE_SUBDIRS . agent datapath partner switch ud verbs)

# The control socket's lines (ctl_line.c) and JSON (migr_json.c) are common/'s, which migrd and
# the CRIU plugin read and write with too: at the top of the rdma-core
# tree (buildlib/upstream.sh), as of this repository
if (NOT MIGR_COMMON_DIR)
  set(MIGR_COMMON_DIR "${PROJECT_SOURCE_DIR}/common")
endif()
list(APPEND MIGR_PROVIDER_SOURCES "${MIGR_COMMON_DIR}/ctl_line.c"
  "${MIGR_COMMON_DIR}/migr_json.c")

# Absolute paths of both, for users outside this directory
set(MIGR_PROVIDER_ROOT "${CMAKE_CURRENT_LIST_DIR}")
set(MIGR_PROVIDER_SOURCES_ABS "")
foreach(s ${MIGR_PROVIDER_SOURCES})
  get_filename_component(a "${s}" ABSOLUTE BASE_DIR "${MIGR_PROVIDER_ROOT}")
  list(APPEND MIGR_PROVIDER_SOURCES_ABS "${a}")
endforeach()
set(MIGR_PROVIDER_INCLUDE_DIRS "${MIGR_COMMON_DIR}")
foreach(d ${MIGR_PROVIDER_INCLUDE_SUBDIRS})
  list(APPEND MIGR_PROVIDER_INCLUDE_DIRS "${MIGR_PROVIDER_ROOT}/${d}")
endforeach()
