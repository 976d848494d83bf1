# tests/loop: the loop's tests use the scripted OpenAI-compatible server (tests/fixtures) in-process.
include(${CMAKE_CURRENT_SOURCE_DIR}/fixtures/CMakeLists.txt)
if(TARGET marathon_loop_tests)
  target_link_libraries(marathon_loop_tests PRIVATE marathon_test_fixtures)
endif()
