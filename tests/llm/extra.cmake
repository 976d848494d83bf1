# The provider tests talk to a real HTTP server on loopback: the scripted fixture.
include(${CMAKE_CURRENT_SOURCE_DIR}/fixtures/CMakeLists.txt)
if(TARGET marathon_llm_tests)
  target_link_libraries(marathon_llm_tests PRIVATE marathon_test_fixtures)
  add_dependencies(marathon_llm_tests scripted_llm_server)
  target_compile_definitions(marathon_llm_tests PRIVATE
    SCRIPTED_LLM_SERVER="$<TARGET_FILE:scripted_llm_server>")
endif()
