# tests/serve: the dashboard's tests build runs with the loop's helpers and talk to the server over
# real HTTP (cpp-httplib's client). browser_test.py drives Debian's chromium through Selenium
# (chromium-driver, python3-selenium: scripts/install-deps) against `marathon serve` on a run made
# by the scripted model, and on a report opened from disk.
if(TARGET marathon_serve_tests)
  include(${CMAKE_SOURCE_DIR}/tests/fixtures/CMakeLists.txt)
  target_link_libraries(marathon_serve_tests PRIVATE marathon_test_fixtures)
  add_dependencies(marathon_serve_tests scripted_llm_server)
endif()
find_program(MARATHON_SYSTEM_PYTHON python3 PATHS /usr/bin NO_DEFAULT_PATH REQUIRED)
add_test(NAME serve.browser
         COMMAND ${MARATHON_SYSTEM_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/browser_test.py
                 --marathon $<TARGET_FILE:marathon>
                 --scripted-server $<TARGET_FILE:scripted_llm_server>
                 --task ${CMAKE_SOURCE_DIR}/tests/loop/fixtures/tiny-task
                 --out ${CMAKE_BINARY_DIR}/test-output/serve-browser)
set_tests_properties(serve.browser PROPERTIES TIMEOUT 600)
