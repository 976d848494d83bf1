# Helper binaries of the core tests.
#   marathon_core_cli: the status/log/fork commands (src/cli/cmd_*.cc) behind a minimal main, so the
#     command-line contracts of the log are tested without the rest of the binary (status reads a
#     run's branches and its executor's utilisation: loop/branches.h, eval/executor_usage.h).
#   core_crash_writer: the child process the SIGKILL crash test kills.
add_executable(marathon_core_cli
  ${CMAKE_CURRENT_LIST_DIR}/helpers/core_cli_main.cc
  ${CMAKE_SOURCE_DIR}/src/cli/cmd_status.cc
  ${CMAKE_SOURCE_DIR}/src/cli/cmd_log.cc
  ${CMAKE_SOURCE_DIR}/src/cli/cmd_fork.cc
  ${CMAKE_SOURCE_DIR}/src/cli/budget_flags.cc
  ${CMAKE_SOURCE_DIR}/src/cli/usage.cc)
target_link_libraries(marathon_core_cli PRIVATE marathon_loop CLI11::CLI11)

add_executable(core_crash_writer ${CMAKE_CURRENT_LIST_DIR}/helpers/crash_writer.cc)
target_link_libraries(core_crash_writer PRIVATE marathon_core)

target_sources(marathon_core_tests PRIVATE ${CMAKE_CURRENT_LIST_DIR}/helpers/crash_workload.cc)
target_include_directories(marathon_core_tests PRIVATE ${CMAKE_CURRENT_LIST_DIR})
target_sources(core_crash_writer PRIVATE ${CMAKE_CURRENT_LIST_DIR}/helpers/crash_workload.cc)
target_include_directories(core_crash_writer PRIVATE ${CMAKE_CURRENT_LIST_DIR})
add_dependencies(marathon_core_tests marathon_core_cli core_crash_writer)
target_compile_definitions(marathon_core_tests PRIVATE
  CORE_CLI_BINARY="$<TARGET_FILE:marathon_core_cli>"
  CRASH_WRITER_BINARY="$<TARGET_FILE:core_crash_writer>")
