# tests/control: `marathon serve --stdio` driven through the real binary, with a real runner on the
# scripted OpenAI-compatible server (tests/fixtures) and the loop's tiny task.
include(${CMAKE_CURRENT_SOURCE_DIR}/fixtures/CMakeLists.txt)
if(TARGET marathon_control_tests)
  target_link_libraries(marathon_control_tests PRIVATE marathon_test_fixtures)
  target_include_directories(marathon_control_tests PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
endif()
