// What the GPT reads in one step, on one rank.
#pragma once

#include <vector>

#include "dtk/gpt/communication.hpp"  // Tokens

namespace dtk::gpt {

// What the model reads in one step, on this rank.
struct GptBatch {
  int batch = 0;               // B: sequences
  std::vector<int> positions;  // their S positions this rank holds (0, 1, ..., T−1 on one rank)
  Tokens tokens;               // (B · S): row b · S + s
  Tokens targets;              // the next token of each, same layout; empty: no loss
  // The loss is the mean over the GLOBAL batch: Σ cross-entropy / loss_tokens, where
  // loss_tokens counts the tokens of every rank's sequences (the global B · T). Summing the
  // ranks' gradients then gives the global batch's gradient.
  double loss_tokens = 1;
  // A mixture of experts' load-balancing loss is over the routing of the tokens processed
  // together: the global batch, or under micro-batches one micro-batch of the global batch (its
  // share on every data-parallel rank), whose losses then weigh 1/m each: the step's
  // load-balancing loss is the mean of its micro-batches'. routed_tokens counts those tokens
  // (0: loss_tokens, the whole global batch).
  double routed_tokens = 0;
  double aux_weight = 1;
  // false for evaluation and sampling (no backward follows): a mixture of experts then skips
  // the whole batch's statistics of its load-balancing loss, and their communication.
  bool training = true;
};

}  // namespace dtk::gpt
