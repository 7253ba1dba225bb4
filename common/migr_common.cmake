# common/: what the migr provider, migrd and the CRIU plugin share, placed
# at the top of the rdma-core tree as common/ by buildlib/upstream.sh.
# Included by migrd/ and criu/ (the first defines the library); the
# provider compiles the lines and the JSON itself (migr_sources.cmake).
#   ctl_line.c    the control socket's lines: one grammar
#   partner_line.c the partner protocol's lines: one grammar
#   ctl_reply.c   a control reply read by its keys (over migr_json.c)
#   ctl_client.c  one request to a control socket, bounded (over sockio.c)
#   ctl_resume.c  who resumes a process CRIU restored parked
#   proc_ns.c     a process's numbers in its pid namespaces (NSpid)
#   sockio.c      bounded socket I/O (migrd, migrctl, the client)
#   migr_json.c   JSON read and written (over jansson), by all of them
# migr_ctl, a static library of them,
# position-independent: the plugin is a shared object.
if (NOT TARGET migr_ctl)
  set(MIGR_COMMON_DIR "${CMAKE_CURRENT_LIST_DIR}")
  pkg_check_modules(JANSSON REQUIRED jansson)
  add_library(migr_ctl STATIC
    "${MIGR_COMMON_DIR}/ctl_line.c" "${MIGR_COMMON_DIR}/partner_line.c"
    "${MIGR_COMMON_DIR}/ctl_reply.c"
    "${MIGR_COMMON_DIR}/ctl_client.c" "${MIGR_COMMON_DIR}/ctl_resume.c"
    "${MIGR_COMMON_DIR}/proc_ns.c" "${MIGR_COMMON_DIR}/sockio.c"
    "${MIGR_COMMON_DIR}/migr_json.c")
  set_target_properties(migr_ctl PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_include_directories(migr_ctl PUBLIC "${MIGR_COMMON_DIR}"
    ${JANSSON_INCLUDE_DIRS})
  target_link_libraries(migr_ctl PUBLIC ${JANSSON_LINK_LIBRARIES})
endif()
