// Self-test submission: "solves" Part 1 by including the reference solution from the grading
// machine. The grader must not compile it: Part 1 gets no points.
#include "@DTK_SOLUTIONS_DIR@/data/data_parallel_preprocess.cpp"
