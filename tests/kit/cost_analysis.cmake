# Self-tests: the model_training_cost_analysis program (Parts 4-5), built with the reference.
# Each case runs the program once through cost_analysis/expect.sh, which checks its exit status
# and its exact output: the published figures for good configs and budgets; for every bad input,
# exit status 2 and exactly one line on stderr naming the problem.
set(DTK_COST_DATA ${CMAKE_CURRENT_LIST_DIR}/cost_analysis)
set(DTK_LLAMA_7B_CONFIG ${PROJECT_SOURCE_DIR}/starter/llama_7b_config.json)

# dtk_cost_analysis_test(<name> <expect.sh options...> -- <program arguments...>)
function(dtk_cost_analysis_test name)
  list(FIND ARGN "--" split)
  list(SUBLIST ARGN 0 ${split} checks)
  math(EXPR first_argument "${split} + 1")
  list(LENGTH ARGN count)
  set(arguments "")
  if(first_argument LESS count)
    list(SUBLIST ARGN ${first_argument} -1 arguments)
  endif()
  add_test(NAME kit_cost_analysis_${name}
           COMMAND ${DTK_COST_DATA}/expect.sh ${checks} --
                   $<TARGET_FILE:model_training_cost_analysis> ${arguments})
endfunction()

# Good inputs: the figures of the handout, to the digit the program prints.
dtk_cost_analysis_test(llama_7b --stdout ${DTK_COST_DATA}/llama_7b.out
                       -- --model_config ${DTK_LLAMA_7B_CONFIG})
dtk_cost_analysis_test(budget_1.23e22 --stdout ${DTK_COST_DATA}/budget_1.23e22.out
                       -- --training_budget 1.23e22)
dtk_cost_analysis_test(llama_7b_and_budget
                       --stdout ${DTK_COST_DATA}/llama_7b_and_budget_1.23e22.out
                       -- --model_config ${DTK_LLAMA_7B_CONFIG} --training_budget 1.23e22)
# No model_type and num_key_value_heads null: the Hugging Face fallbacks give Llama-7B again.
dtk_cost_analysis_test(llama_7b_fallbacks --stdout ${DTK_COST_DATA}/llama_7b.out
                       -- --model_config ${DTK_COST_DATA}/llama_7b_minimal_config.json)
# Any model_type but gpt2 is read with Llama's keys: Llama-7B's shape named "mistral".
dtk_cost_analysis_test(llama_keys_any_model_type --stdout ${DTK_COST_DATA}/llama_7b.out
                       -- --model_config ${DTK_COST_DATA}/mistral_named_llama_7b_config.json)
# GPT-2 small: biases, LayerNorm, learned positions, tied head (124,439,808 parameters).
dtk_cost_analysis_test(gpt2_small --stdout ${DTK_COST_DATA}/gpt2_small.out
                       -- --model_config ${DTK_COST_DATA}/gpt2_small_config.json)
# Llama-2-70B: grouped-query attention, 8 K/V heads (68,976,648,192 parameters).
dtk_cost_analysis_test(llama2_70b --stdout ${DTK_COST_DATA}/llama2_70b.out
                       -- --model_config ${DTK_COST_DATA}/llama2_70b_config.json)
dtk_cost_analysis_test(help --stdout-starts "usage: model_training_cost_analysis" -- --help)

# Bad inputs: exit status 2, one line naming the problem.
set(DTK_COST_ERROR "^model_training_cost_analysis: ")
dtk_cost_analysis_test(missing_file --status 2
                       --stderr-line "${DTK_COST_ERROR}model config \".*/no_such_config.json\": no such file$"
                       -- --model_config ${DTK_COST_DATA}/no_such_config.json)
dtk_cost_analysis_test(directory --status 2 --stderr-line "${DTK_COST_ERROR}model config .*: is a directory"
                       -- --model_config ${DTK_COST_DATA})
dtk_cost_analysis_test(malformed_json --status 2
                       --stderr-line "${DTK_COST_ERROR}model config .*: not valid JSON: parse error at line 4"
                       -- --model_config ${DTK_COST_DATA}/malformed_config.json)
dtk_cost_analysis_test(missing_key --status 2
                       --stderr-line "${DTK_COST_ERROR}model config .*: missing key \"num_hidden_layers\"$"
                       -- --model_config ${DTK_COST_DATA}/missing_key_config.json)
dtk_cost_analysis_test(bad_value --status 2
                       --stderr-line "${DTK_COST_ERROR}model config .*: key \"hidden_size\" must be a positive integer"
                       -- --model_config ${DTK_COST_DATA}/bad_value_config.json)
# A malformed key is present (not null) but not what the table expects: a string, a fraction,
# zero or a negative number where a positive integer is needed; a model_type that is no string.
dtk_cost_analysis_test(fraction_value --status 2
                       --stderr-line "${DTK_COST_ERROR}model config .*: key \"num_attention_heads\" must be a positive integer, not 32.5$"
                       -- --model_config ${DTK_COST_DATA}/fraction_value_config.json)
dtk_cost_analysis_test(zero_value --status 2
                       --stderr-line "${DTK_COST_ERROR}model config .*: key \"num_hidden_layers\" must be a positive integer, not 0$"
                       -- --model_config ${DTK_COST_DATA}/zero_value_config.json)
dtk_cost_analysis_test(negative_value --status 2
                       --stderr-line "${DTK_COST_ERROR}model config .*: key \"vocab_size\" must be a positive integer, not -32000$"
                       -- --model_config ${DTK_COST_DATA}/negative_value_config.json)
dtk_cost_analysis_test(model_type_not_string --status 2
                       --stderr-line "${DTK_COST_ERROR}model config .*: key \"model_type\" must be a string, not \\[\"llama\"\\]$"
                       -- --model_config ${DTK_COST_DATA}/model_type_not_string_config.json)
# h must be a multiple of a (the head width h / a, hence kvd, is a whole number).
dtk_cost_analysis_test(heads_not_dividing_hidden --status 2
                       --stderr-line "${DTK_COST_ERROR}model config .*: the hidden size, 4096, is not a multiple of the number of attention heads, 30$"
                       -- --model_config ${DTK_COST_DATA}/heads_not_dividing_hidden_config.json)
# head_dim is ignored: the head width is always h / a (Llama-7B's figures with head_dim 100).
dtk_cost_analysis_test(head_dim_ignored --stdout ${DTK_COST_DATA}/llama_7b.out
                       -- --model_config ${DTK_COST_DATA}/head_dim_ignored_config.json)
dtk_cost_analysis_test(budget_not_a_number --status 2
                       --stderr-line "${DTK_COST_ERROR}--training_budget: \"abc\" is not a number"
                       -- --training_budget abc)
dtk_cost_analysis_test(budget_trailing_text --status 2
                       --stderr-line "${DTK_COST_ERROR}--training_budget: \"1e22x\" is not a number"
                       -- --training_budget 1e22x)
dtk_cost_analysis_test(budget_negative --status 2
                       --stderr-line "${DTK_COST_ERROR}--training_budget: \"-1e22\" is not a positive number"
                       -- --training_budget -1e22)
dtk_cost_analysis_test(budget_zero --status 2
                       --stderr-line "${DTK_COST_ERROR}--training_budget: \"0\" is not a positive number"
                       -- --training_budget 0)
dtk_cost_analysis_test(budget_infinite --status 2
                       --stderr-line "${DTK_COST_ERROR}--training_budget: \"inf\" is not a positive number"
                       -- --training_budget inf)
dtk_cost_analysis_test(budget_out_of_range --status 2
                       --stderr-line "${DTK_COST_ERROR}--training_budget: \"1e999\" is out of range"
                       -- --training_budget 1e999)
dtk_cost_analysis_test(missing_value --status 2
                       --stderr-line "${DTK_COST_ERROR}--model_config needs a value$"
                       -- --model_config)
dtk_cost_analysis_test(missing_value_before_flag --status 2
                       --stderr-line "${DTK_COST_ERROR}--model_config needs a value$"
                       -- --model_config --training_budget 1.23e22)
dtk_cost_analysis_test(unknown_flag --status 2
                       --stderr-line "${DTK_COST_ERROR}unknown argument \"--model-config\""
                       -- --model-config ${DTK_LLAMA_7B_CONFIG})
# A bad budget is reported before any config is read: no partial output.
dtk_cost_analysis_test(good_config_bad_budget --status 2
                       --stderr-line "${DTK_COST_ERROR}--training_budget: \"0\" is not a positive number"
                       -- --model_config ${DTK_LLAMA_7B_CONFIG} --training_budget 0)
dtk_cost_analysis_test(no_arguments --status 2 --stderr-starts "usage: model_training_cost_analysis" --)
