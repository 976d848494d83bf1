# tests/context: the kill-during-compaction test drives a small runner over a real log in a child
# process; the binary-level long run drives `marathon run` against the scripted LLM server.
add_executable(context_compaction_child ${CMAKE_CURRENT_SOURCE_DIR}/context/compaction_child.cc)
target_link_libraries(context_compaction_child PRIVATE marathon_context)
if(TARGET marathon_context_tests)
  add_dependencies(marathon_context_tests context_compaction_child)
  target_compile_definitions(marathon_context_tests PRIVATE
    CONTEXT_CHILD="$<TARGET_FILE:context_compaction_child>")
endif()

