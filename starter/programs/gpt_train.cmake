# gpt_train, the GPT's trainer, on the students' functions: Parts 10-12's for its layouts; Part
# 8's for its pipeline (--pp), Part 9's for ZeRO (--zero 1, 2), Part 14's for its grid and
# interleaved schedule, Part 15's for its buckets (--bucket_mb) and Part 16's for ZeRO-3 (--zero
# 3), where the tree has them (dtk_tree_has:
# the student file, or in assignment 4's bundle the earlier parts' reference, compiled). Included
# by assignment3.cmake and assignment4.cmake; the first one defines it, where the tree has the
# GPT and Parts 10-12.
if(TARGET gpt_train OR NOT DTK_HOLDS_GPT)
  return()
endif()
foreach(file tensor_parallel/tensor_parallel.cpp context_parallel/context_parallel.cpp
             expert_parallel/expert_parallel.cpp)
  dtk_tree_has(has ${CMAKE_CURRENT_SOURCE_DIR} ${file})
  if(NOT has)
    return()
  endif()
endforeach()

dtk_add_program(gpt_train gpt_train.cpp)
target_sources(gpt_train PRIVATE programs/gpt_train_report.cpp programs/gpt_train_parallelism.cpp
                                 programs/gpt_train_analytic.cpp programs/command_line.cpp)
target_link_libraries(gpt_train PRIVATE dtk_gpt)
if(TARGET dtk_prebuilt)
  target_link_libraries(gpt_train PRIVATE dtk_prebuilt)
endif()
# gpt_train_parallelism.cpp binds what the tree has (DTK_WITH_GPT_*): only it is compiled with
# those definitions, so that the other sources compile alike in every tree (ccache hands the
# kit's objects to the bundles' builds).
set(bound "")
macro(gpt_train_binds part file definition)
  dtk_tree_has(has ${CMAKE_CURRENT_SOURCE_DIR} ${part})
  if(has)
    target_sources(gpt_train PRIVATE programs/${file})
    list(APPEND bound ${definition}=1)
  endif()
endmacro()
gpt_train_binds(pipeline/pipeline.cpp gpt_train_pipeline.cpp DTK_WITH_GPT_PIPELINE)
gpt_train_binds(zero/zero.cpp gpt_train_zero.cpp DTK_WITH_GPT_ZERO)
gpt_train_binds(overlap/overlap.cpp gpt_train_overlap.cpp DTK_WITH_GPT_OVERLAP)
gpt_train_binds(memory/memory.cpp gpt_train_memory.cpp DTK_WITH_GPT_MEMORY)
# The interleaved schedule's chunks are cut by Part 8's partition.
dtk_tree_has(has_part8 ${CMAKE_CURRENT_SOURCE_DIR} pipeline/pipeline.cpp)
if(has_part8)
  gpt_train_binds(five_dimensional/five_dimensional.cpp gpt_train_five_dimensional.cpp
                  DTK_WITH_GPT_INTERLEAVED)
endif()
set_property(SOURCE programs/gpt_train_parallelism.cpp APPEND PROPERTY COMPILE_DEFINITIONS
             ${bound})
