# The assignments of a tree, and its student library.
#
# An assignment is found, never listed: assignment N exists where starter/handin/assignment<N>.txt
# does (its student files, one path per line, # comments; make, the scripts and dtk-grade read
# the same list). This module defines
#   DTK_ASSIGNMENTS                  the assignments found, in increasing order ("1;2;3")
#   DTK_ASSIGNMENT<N>_STUDENT_FILES  each one's student files
#   DTK_STUDENT_FILES                all of them, in assignment order
# The kit holds every assignment; a student bundle holds its own only (make-release.sh ships
# only its own list).
#
# dtk_add_student_library(<name> <student_dir>): a static library holding all provided (non-main)
# code plus the student files found in <student_dir>, with public include directories and link
# dependencies: linking it is enough. The kit makes two: dtk_starter (starter/) and
# dtk_solutions (solutions/).
include_guard(GLOBAL)

set(DTK_HANDIN_LISTS_DIR ${CMAKE_CURRENT_LIST_DIR}/../starter/handin)

# dtk_student_files(<assignment> <out_var>): the student files of an assignment, from its list.
function(dtk_student_files assignment out_var)
  set(list_file ${DTK_HANDIN_LISTS_DIR}/assignment${assignment}.txt)
  file(STRINGS ${list_file} files REGEX "^[^#]")
  if(NOT files)
    message(FATAL_ERROR "${list_file} lists no student file")
  endif()
  set(${out_var} ${files} PARENT_SCOPE)
endfunction()

# Reconfigure when an assignment is added or removed, or a list changes.
file(GLOB dtk_handin_lists CONFIGURE_DEPENDS ${DTK_HANDIN_LISTS_DIR}/assignment*.txt)
set(DTK_ASSIGNMENTS "")
set(DTK_STUDENT_FILES "")
foreach(list_file IN LISTS dtk_handin_lists)
  get_filename_component(name ${list_file} NAME_WE)
  string(REGEX MATCH "^assignment([1-9][0-9]*)$" matched ${name})
  if(NOT matched)
    message(FATAL_ERROR "${list_file}: an assignment's list is named assignment<N>.txt, N = 1, 2, ...")
  endif()
  list(APPEND DTK_ASSIGNMENTS ${CMAKE_MATCH_1})
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${list_file})
endforeach()
list(SORT DTK_ASSIGNMENTS COMPARE NATURAL)
foreach(assignment IN LISTS DTK_ASSIGNMENTS)
  dtk_student_files(${assignment} DTK_ASSIGNMENT${assignment}_STUDENT_FILES)
  list(APPEND DTK_STUDENT_FILES ${DTK_ASSIGNMENT${assignment}_STUDENT_FILES})
endforeach()
if(NOT DTK_ASSIGNMENTS)
  message(FATAL_ERROR "${DTK_HANDIN_LISTS_DIR} holds no assignment<N>.txt: no assignment to build")
endif()

# dtk_tree_holds(<out_var> <dir> <assignment>): whether <dir> holds every student file of the
# assignment (a student bundle holds one assignment's; the kit's trees hold them all). An
# assignment this tree does not know (another bundle's: no list) is not held.
function(dtk_tree_holds out_var dir assignment)
  set(holds TRUE)
  if(NOT assignment IN_LIST DTK_ASSIGNMENTS)
    set(holds FALSE)
  endif()
  foreach(file IN LISTS DTK_ASSIGNMENT${assignment}_STUDENT_FILES)
    if(NOT EXISTS ${dir}/${file})
      set(holds FALSE)
    endif()
  endforeach()
  set(${out_var} ${holds} PARENT_SCOPE)
endfunction()

# A tree holds the student files of one assignment (a student bundle) or of all (the kit): its
# library takes the ones it holds, and the programs and public tests that need the others are
# left out.
function(dtk_add_student_library name student_dir)
  set(sources "")
  foreach(file IN LISTS DTK_STUDENT_FILES)
    if(EXISTS "${student_dir}/${file}")
      list(APPEND sources "${student_dir}/${file}")
    endif()
  endforeach()
  if(NOT sources)
    message(FATAL_ERROR "${student_dir} holds no student file of any assignment")
  endif()
  add_library(${name} STATIC ${sources})
  # dtk_provided is an OBJECT library: its objects go into this archive.
  target_link_libraries(${name} PUBLIC dtk_provided)
  # Assignment 3's GPT where the tree holds it (starter/CMakeLists.txt defines dtk_gpt first):
  # Part 11's functions call its attention kernels, and linking the library must be enough.
  if(TARGET dtk_gpt)
    target_link_libraries(${name} PUBLIC dtk_gpt)
  endif()
  # Stubs leave their parameters unused until the student fills them in.
  target_compile_options(${name} PRIVATE -Wall -Wextra -Wno-unused-parameter)
endfunction()
