# Self-tests: assignment 3's GPT (starter/include/dtk/gpt, src/gpt) and gpt_train. Sources and
# scripts live in gpt/.

# The model against PyTorch (Debian's python3-torch, run by /usr/bin/python3): logits, loss and
# every gradient of GPT-2's block and a Llama's (dense, grouped-query and multi-query, and
# mixtures of experts), in float and double; and the negative controls: a PyTorch model with
# LayerNorm's eps, GELU's form, the rotary pairs or RMSNorm's eps wrong must disagree.
kit_pytorch_check(kit_gpt_pytorch_oracle gpt/oracle_case.cpp gpt/check_oracle.py
                  WRONG eps gelu rope rms_eps LIBRARIES dtk_gpt)

# The attention kernels (against attention written out, merged blocks, finite differences), the
# model's gradients against finite differences, and the data: the Bible stripped, the tokeniser,
# refused texts, batches, the learning-rate schedule, refused shapes.
foreach(test kernels data)
  add_executable(kit_gpt_${test} gpt/test_gpt_${test}.cpp)
  target_link_libraries(kit_gpt_${test} PRIVATE dtk_test_harness dtk_gpt dtk_solutions)
  set_target_properties(kit_gpt_${test} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${PROJECT_BINARY_DIR}/tests/kit)
  dtk_add_mpi_test(NAME kit_gpt_${test} RANKS 1 COMMAND $<TARGET_FILE:kit_gpt_${test}>)
endforeach()

# gpt_train: dp = 1..4 give the same model (dense and experts, double and float), and so do the
# layouts of Parts 10 (tensor: tp, sp), 11 (context: cp, zig-zag), 12 (experts: ep) and Part 8's
# pipeline of the model (pipeline: pp with every other axis, to 1e-10), with their bytes against
# the analytic counts; Part 15's buckets (buckets: dp, cp and tp with --bucket_mb, to 1e-10, the
# rings' Isends made during the backward); a bf16 run (bf16: the same bits twice, near float's,
# its bytes as counted); a Llama (llama: grouped-query attention with dp, tp, sp, cp, pp (and
# interleaved), recomputation, ZeRO and buckets, key/value heads replicated over tp/kv ranks
# (kv < tp, multi-query's one too), multi-head with tp, sp and cp, experts with ep, to 1e-10,
# bytes and activations as counted; and in bf16); every bad command line or input is one line and
# exit 2; the BLAS's kernels are the processor's fastest unless the environment names them, with
# the same weights; a short run on the Bible learns.
foreach(mode layouts tensor context experts pipeline buckets memory zero bf16 llama cli blas
             learns)
  add_test(NAME kit_gpt_train_${mode}
           COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/gpt/check_gpt_train.py ${mode}
                   $<TARGET_FILE:gpt_train> ${DTK_MPIEXEC} ${DTK_MPIRUN_FLAGS})
  dtk_whole_machine(kit_gpt_train_${mode})
endforeach()
