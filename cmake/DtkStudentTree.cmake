# dtk_add_student_library(<name> <student_dir>)
#
# A static library holding all provided (non-main) code plus the three student files found in
# <student_dir>, with public include directories and link dependencies: linking it is enough.
# The kit makes two: dtk_starter (starter/) and dtk_solutions (solutions/).
include_guard(GLOBAL)

set(DTK_STUDENT_FILES
    data/data_parallel_preprocess.cpp
    model/func_impl.cpp
    model_training_cost_analysis.cpp)

function(dtk_add_student_library name student_dir)
  list(TRANSFORM DTK_STUDENT_FILES PREPEND "${student_dir}/" OUTPUT_VARIABLE sources)
  add_library(${name} STATIC ${sources})
  # dtk_provided is an OBJECT library: its objects go into this archive.
  target_link_libraries(${name} PUBLIC dtk_provided)
  # Stubs leave their parameters unused until the student fills them in.
  target_compile_options(${name} PRIVATE -Wall -Wextra -Wno-unused-parameter)
endfunction()
