# LlmPolicy is tested over a real provider against the scripted HTTP server on loopback.
include(${CMAKE_CURRENT_SOURCE_DIR}/fixtures/CMakeLists.txt)
if(TARGET marathon_policy_tests)
  target_link_libraries(marathon_policy_tests PRIVATE marathon_test_fixtures)
endif()
