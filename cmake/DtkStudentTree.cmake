# The assignments of a tree, and its student library.
#
# An assignment is found, never listed: assignment N exists where starter/handin/assignment<N>.txt
# does (its student files, one path per line, # comments; make, the scripts and dtk-grade read
# the same list). This module defines
#   DTK_ASSIGNMENTS                  the assignments found, in increasing order ("1;2;3")
#   DTK_ASSIGNMENT<N>_STUDENT_FILES  each one's student files
#   DTK_STUDENT_FILES                all of them, in assignment order
# The kit holds every assignment; a student bundle holds its own only (make-release.sh ships
# only its own list), and may carry earlier assignments' files as the reference, compiled
# (prebuilt/: dtk_import_prebuilt).
#
# dtk_add_student_library(<name> <student_dir>): a static library holding all provided (non-main)
# code plus the student files found in <student_dir>, with public include directories and link
# dependencies: linking it is enough. The kit makes two: dtk_starter (starter/) and
# dtk_solutions (solutions/).
include_guard(GLOBAL)

set(DTK_HANDIN_LISTS_DIR ${CMAKE_CURRENT_LIST_DIR}/../starter/handin)

# dtk_read_list(<file> <out_var>): the paths a list file names, one per line, comments (from #)
# and blank lines dropped: the student files' lists, and the lists of release/.
function(dtk_read_list list_file out_var)
  file(STRINGS ${list_file} lines)
  set(paths "")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE "[ \t]*#.*$" "" line "${line}")
    string(STRIP "${line}" line)
    if(line)
      list(APPEND paths ${line})
    endif()
  endforeach()
  if(NOT paths)
    message(FATAL_ERROR "${list_file} lists no file")
  endif()
  set(${out_var} ${paths} PARENT_SCOPE)
endfunction()

# dtk_student_files(<assignment> <out_var>): the student files of an assignment, from its list.
function(dtk_student_files assignment out_var)
  dtk_read_list(${DTK_HANDIN_LISTS_DIR}/assignment${assignment}.txt files)
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

# dtk_tree_has(<out_var> <dir> <file>): whether the programs of the tree in <dir> can call the
# functions of one student file: <dir> holds it, or carries its reference compiled (prebuilt/).
function(dtk_tree_has out_var dir file)
  set(has FALSE)
  if(EXISTS ${dir}/${file} OR file IN_LIST DTK_PREBUILT_FILES)
    set(has TRUE)
  endif()
  set(${out_var} ${has} PARENT_SCOPE)
endfunction()

# Stubs leave their parameters unused until the student fills them in: the options every
# student file compiles with, in a student library and in a reference archive alike.
function(dtk_student_file_options target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
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
  dtk_student_file_options(${name})
endfunction()

# The reference of earlier assignments' student files that a bundle carries compiled, never as
# source (release/assignment<N>-reference.txt; `make release` packs it as starter/prebuilt/):
#   dtk_add_reference_archive(<name> <list_file> <solutions_dir>), in the kit: a static library
#     of the listed files of <solutions_dir>, compiled as a student library's are, without the
#     provided code (the bundle's own library holds that);
#   dtk_import_prebuilt(<prebuilt_dir> <student_library>), in a bundle: the archive as the
#     imported target dtk_prebuilt, linked before <student_library>, and its files as
#     DTK_PREBUILT_FILES (dtk_tree_has). Nothing where the tree carries none.
function(dtk_add_reference_archive name list_file solutions_dir)
  dtk_read_list(${list_file} files)
  list(TRANSFORM files PREPEND ${solutions_dir}/)
  add_library(${name} STATIC ${files})
  target_link_libraries(${name} PRIVATE dtk_headers)
  dtk_student_file_options(${name})
endfunction()

function(dtk_import_prebuilt prebuilt_dir student_library)
  set(DTK_PREBUILT_FILES "" PARENT_SCOPE)
  if(NOT EXISTS ${prebuilt_dir}/libdtk_reference.a)
    return()
  endif()
  dtk_read_list(${prebuilt_dir}/reference.txt files)
  add_library(dtk_prebuilt STATIC IMPORTED GLOBAL)
  set_target_properties(dtk_prebuilt PROPERTIES
      IMPORTED_LOCATION ${prebuilt_dir}/libdtk_reference.a
      # Its objects call the provided code: the student library again after it.
      INTERFACE_LINK_LIBRARIES ${student_library})
  set(DTK_PREBUILT_FILES ${files} PARENT_SCOPE)
endfunction()
