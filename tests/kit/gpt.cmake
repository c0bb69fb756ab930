# Self-tests: assignment 3's GPT (starter/include/dtk/gpt, src/gpt) and gpt_train. Sources and
# scripts live in gpt/.

# The model against PyTorch (Debian's python3-torch, run by /usr/bin/python3): logits, loss and
# every gradient of the dense model and of a mixture of experts, in float and double; and the
# negative controls: a PyTorch model with LayerNorm's eps or GELU's form wrong must disagree.
add_executable(kit_gpt_oracle_case gpt/oracle_case.cpp)
target_link_libraries(kit_gpt_oracle_case PRIVATE dtk_gpt dtk_solutions)
set_target_properties(kit_gpt_oracle_case PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests/kit)
add_test(NAME kit_gpt_pytorch_oracle
         COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/gpt/check_oracle.py
                 $<TARGET_FILE:kit_gpt_oracle_case>)
foreach(wrong eps gelu)
  add_test(NAME kit_gpt_pytorch_oracle_sees_wrong_${wrong}
           COMMAND /usr/bin/python3 ${CMAKE_CURRENT_SOURCE_DIR}/gpt/check_oracle.py
                   $<TARGET_FILE:kit_gpt_oracle_case> --wrong ${wrong})
endforeach()
