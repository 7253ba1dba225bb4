# The migr provider's sources and include directories, in one place: read
# by this directory's CMakeLists.txt (the provider), by the unit tests'
# static library of the provider (tests/unit) and by the benchmark's
# shared object (bench). Paths are relative to this directory.
set(MIGR_PROVIDER_SOURCES
  device.c
  core/gid.c
  core/queue_owner.c
  core/quiesce.c
  core/u32map.c
  core/xlate.c
  datapath/cq_ex.c
  datapath/cq_poll.c
  datapath/cq_watch.c
  datapath/marker.c
  datapath/mw_track.c
  datapath/peer.c
  datapath/post.c
  datapath/qp_ex.c
  datapath/qp_ex_hold.c
  datapath/ring.c
  datapath/rlog.c
  datapath/shadow.c
  datapath/slog.c
  datapath/slow.c
  datapath/ud_redirect.c
  verbs/ah.c
  verbs/cq.c
  verbs/events.c
  verbs/flow.c
  verbs/mr.c
  verbs/mr_mark.c
  verbs/numbers.c
  verbs/pd.c
  verbs/qp.c
  verbs/quirks.c
  verbs/record.c
  verbs/srq.c
  verbs/wq.c
  calls/migrd_call.c
  calls/partner_call.c
  calls/partner_fetch.c
  calls/ud_announce.c
  switch/dm_switch.c
  switch/mw_switch.c
  switch/park.c
  switch/partner_steps.c
  switch/qp_phase.c
  switch/rebuild.c
  switch/replay.c
  switch/srq_switch.c
  switch/switch.c
  switch/switch_check.c
  switch/switch_drain.c
  switch/ud_switch.c
  serve/agent.c
  serve/contexts.c
  serve/control.c
  serve/control_ops.c
  serve/fence.c
  serve/partner_args.c
  serve/partner_follow.c
  serve/partner_keys.c
  serve/partner_serve.c
  serve/partner_session.c
  serve/register.c
  serve/ud_args.c
  serve/ud_serve.c
  )
# Every header is included by its name alone, from its floor's folder
# (docs/architecture.md, "The provider's floors"): calls go down only.
set(MIGR_PROVIDER_INCLUDE_SUBDIRS core datapath verbs calls switch serve)

# The control socket's and the partner protocol's lines (ctl_line.c,
# partner_line.c) and JSON (migr_json.c) are common/'s, which migrd and
# the CRIU plugin read and write with too: at the top of the rdma-core
# tree (buildlib/upstream.sh), as of this repository
if (NOT MIGR_COMMON_DIR)
  set(MIGR_COMMON_DIR "${PROJECT_SOURCE_DIR}/common")
endif()
list(APPEND MIGR_PROVIDER_SOURCES "${MIGR_COMMON_DIR}/ctl_line.c"
  "${MIGR_COMMON_DIR}/partner_line.c" "${MIGR_COMMON_DIR}/migr_json.c")

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
