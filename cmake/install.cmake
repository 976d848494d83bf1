# The `marathon` binary's build-time facts and its installation (docs/operations.md, "Installing"):
#   - marathon_version.h: the version and commit `marathon --version` names, restamped each build;
#   - MARATHON_SOURCE_DIR: where a binary run from the build tree finds harness/ and tasks/;
#   - install rules: PREFIX/bin/marathon, PREFIX/share/marathon/{harness,tasks,python} (python: the
#     interpreter of the environment `make` prepared, from MARATHON_PYTHON at install time, else
#     at configure time) and PREFIX/share/doc/marathon. The binary finds them from its own path,
#     so the prefix can be chosen at install time (cmake --install build --prefix P).
include(GNUInstallDirs)

set(MARATHON_GENERATED_DIR ${CMAKE_BINARY_DIR}/generated)
add_custom_target(marathon_version_stamp
  COMMAND ${CMAKE_COMMAND} -DSOURCE_DIR=${CMAKE_SOURCE_DIR} -DVERSION=${PROJECT_VERSION}
          -DOUT=${MARATHON_GENERATED_DIR}/marathon_version.h -P ${CMAKE_SOURCE_DIR}/cmake/version_stamp.cmake
  BYPRODUCTS ${MARATHON_GENERATED_DIR}/marathon_version.h
  COMMENT "Stamping the version and commit"
  VERBATIM)
add_dependencies(marathon marathon_version_stamp)
target_include_directories(marathon PRIVATE ${MARATHON_GENERATED_DIR})
target_compile_definitions(marathon PRIVATE MARATHON_SOURCE_DIR="${CMAKE_SOURCE_DIR}")

set(MARATHON_INSTALL_PYTHON "$ENV{MARATHON_PYTHON}" CACHE STRING
    "The Python interpreter an installed marathon uses (default: MARATHON_PYTHON at install time)")

install(TARGETS marathon RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY harness/ DESTINATION ${CMAKE_INSTALL_DATADIR}/marathon/harness
        FILES_MATCHING PATTERN "*.py" PATTERN "__pycache__" EXCLUDE)
install(DIRECTORY tasks/ DESTINATION ${CMAKE_INSTALL_DATADIR}/marathon/tasks USE_SOURCE_PERMISSIONS
        PATTERN "__pycache__" EXCLUDE PATTERN ".pytest_cache" EXCLUDE PATTERN "build" EXCLUDE)
install(DIRECTORY docs/ DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(CODE "
  set(python \"\$ENV{MARATHON_PYTHON}\")
  if(python STREQUAL \"\")
    set(python \"${MARATHON_INSTALL_PYTHON}\")
  endif()
  set(record \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DATADIR}/marathon/python\")
  message(STATUS \"Recording the Python environment: \${record} (\${python})\")
  file(WRITE \"\${record}\" \"\${python}\\n\")
")
