# Assignment 1's programs (included by starter/CMakeLists.txt where the tree holds its student
# files). Not model_training_cost_analysis.cpp: that is the student file's name.
dtk_add_program(model_training_cost_analysis cost_analysis_main.cpp)
# unified_train's tensor- and data-parallel MLP trainer (assignment 1's functions).
dtk_add_unified_train_trainer(unified_train_replicas.cpp DTK_WITH_REPLICAS_TRAINER)
