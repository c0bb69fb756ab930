// The progress line the MLP's trainers print (trainer.hpp, pipeline_trainer.hpp), and its bar,
// which gpt_train's shares.
#pragma once

#include <string>

#include "dtk/mlp/loss.hpp"

namespace dtk {

// "[######--------------]  30%": step of steps as a bar of 20 characters and a percentage.
std::string progress_bar(long step, long steps);

// One progress line, e.g. (one line)
//   epoch 1/1 [######--------------]  30%  step  141/468  loss 0.5123  acc 0.8125  lr 0.0900
//   41.3k img/s
// recent: the loss and accuracy since the previous line, over all replicas.
std::string progress_line(int epoch, int epochs, long step, long steps, const BatchStats& recent,
                          float lr, double images_per_second);

}  // namespace dtk
