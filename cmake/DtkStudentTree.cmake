# dtk_add_student_library(<name> <student_dir>)
#
# A static library holding all provided (non-main) code plus the student files found in
# <student_dir>, with public include directories and link dependencies: linking it is enough.
# The kit makes two: dtk_starter (starter/) and dtk_solutions (solutions/).
include_guard(GLOBAL)

# Assignment 1's student files: its hand-in, its grader and its bundle.
set(DTK_STUDENT_FILES
    data/data_parallel_preprocess.cpp
    model/func_impl.cpp
    model_training_cost_analysis.cpp)

# Assignment 2's student files (Part 7 so far). A tree built without them (assignment 1's
# bundle) leaves them out of its library, with the programs and public tests that need them.
set(DTK_ASSIGNMENT2_STUDENT_FILES
    collectives/my_collectives.cpp)

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
