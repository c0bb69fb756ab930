# dtk_add_student_library(<name> <student_dir>)
#
# A static library holding all provided (non-main) code plus the student files found in
# <student_dir>, with public include directories and link dependencies: linking it is enough.
# The kit makes two: dtk_starter (starter/) and dtk_solutions (solutions/).
include_guard(GLOBAL)

# dtk_student_files(<assignment> <out_var>): the student files of an assignment, from its list
# starter/handin/assignment<N>.txt (one path per line, # comments), which make, the scripts and
# dtk-grade read too.
function(dtk_student_files assignment out_var)
  set(list_file ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../starter/handin/assignment${assignment}.txt)
  file(STRINGS ${list_file} files REGEX "^[^#]")
  if(NOT files)
    message(FATAL_ERROR "${list_file} lists no student file")
  endif()
  # Reconfigure when the list changes.
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${list_file})
  set(${out_var} ${files} PARENT_SCOPE)
endfunction()
dtk_student_files(1 DTK_STUDENT_FILES)

# Assignment 2's student files (Parts 7 to 9). A tree built without them (assignment 1's
# bundle) leaves them out of its library, with the programs and public tests that need them.
dtk_student_files(2 DTK_ASSIGNMENT2_STUDENT_FILES)

function(dtk_add_student_library name student_dir)
  list(TRANSFORM DTK_STUDENT_FILES PREPEND "${student_dir}/" OUTPUT_VARIABLE sources)
  foreach(file IN LISTS DTK_ASSIGNMENT2_STUDENT_FILES)
    if(EXISTS "${student_dir}/${file}")
      list(APPEND sources "${student_dir}/${file}")
    endif()
  endforeach()
  add_library(${name} STATIC ${sources})
  # dtk_provided is an OBJECT library: its objects go into this archive.
  target_link_libraries(${name} PUBLIC dtk_provided)
  # Stubs leave their parameters unused until the student fills them in.
  target_compile_options(${name} PRIVATE -Wall -Wextra -Wno-unused-parameter)
endfunction()
