# tests/context: the kill-during-compaction test drives a small runner over a real log in a child
# process; the binary-level long run drives `marathon run` against the scripted LLM server.
add_executable(context_compaction_child ${CMAKE_CURRENT_SOURCE_DIR}/context/compaction_child.cc)
target_link_libraries(context_compaction_child PRIVATE marathon_context marathon_policy)
if(TARGET marathon_context_tests)
  # The tests' summarisers are policies, handed in through policy/policy.h's summariser_of.
  target_link_libraries(marathon_context_tests PRIVATE marathon_policy)
  add_dependencies(marathon_context_tests context_compaction_child)
  target_compile_definitions(marathon_context_tests PRIVATE
    CONTEXT_CHILD="$<TARGET_FILE:context_compaction_child>")
endif()

# BinaryLongRun.*: 1,200 tool calls through the real binary and real HTTP (about a minute).
include(${CMAKE_CURRENT_SOURCE_DIR}/fixtures/CMakeLists.txt)
add_executable(marathon_context_binary_tests ${CMAKE_CURRENT_SOURCE_DIR}/context/binary_long_run.cc)
target_link_libraries(marathon_context_binary_tests PRIVATE marathon_context marathon_test_fixtures
                      GTest::gtest_main)
target_compile_definitions(marathon_context_binary_tests PRIVATE
  MARATHON_SOURCE_DIR="${CMAKE_SOURCE_DIR}" MARATHON_BINARY="$<TARGET_FILE:marathon>")
add_dependencies(marathon_context_binary_tests marathon)
gtest_discover_tests(marathon_context_binary_tests DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 900)
