// Kit self-test: the GPT's attention kernels and its gradients, checked without PyTorch.
//   - attention_block_forward equals the attention written as loops (attention_loops.hpp), causal
//     by absolute position, also for queries and keys at scattered positions (zigzag chunks);
//   - two disjoint blocks of keys, merged with the lse formula, give the block of all keys (what
//     ring attention relies on); a row that sees no key has lse −∞ and out 0;
//   - grouped-query attention (k and v of fewer heads): the loops' out, and multi-head attention's
//     on the keys and values repeated per query head, its dk and dv summed over each group;
//   - attention_block_backward equals finite differences, and summed over blocks of keys equals
//     the backward over all of them;
//   - the whole model's gradients (dense, mixture of experts, a multi-query Llama) equal finite
//     differences;
//   - micro-batches in flight (slots.hpp): two forwards before their backwards give the gradients
//     of each forward followed by its backward, bit for bit;
//   - the model cut into a pipeline's pieces (GptLayout::piece_begin, piece_end), each stage's
//     stream handed to the next and its gradient back, gives the whole model's loss and
//     gradients bit for bit;
//   - the parameters, a block's forward FLOPs and the numbers it keeps of GPT-2's and a Llama's
//     shape are Part 4's counts of the same config.json (the reference's
//     model_training_cost_analysis; the numbers kept with lse for the probabilities);
//   - a float model keeping its activations as bf16 (bf16_store.hpp): 2 bytes a kept value, 4 a
//     statistic, nothing left once the backward has read them; gradients within 2 % of float's
//     (and not equal), the same bits on every run and with micro-batches in flight.
//   ./build/tests/kit/kit_gpt_kernels
#include "dtk_test.hpp"

#include <dtk/gpt/attention_kernels.hpp>
#include <dtk/gpt/attention_loops.hpp>
#include <dtk/gpt/gpt.hpp>
#include <dtk/memory.hpp>
#include <dtk/model_training_cost_analysis.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <random>

#include <xtensor/xview.hpp>

namespace {

using Matrix = xt::xtensor<double, 2>;
using dtk::testing::Checks;
const double kInfinity = std::numeric_limits<double>::infinity();

Matrix random_matrix(std::size_t rows, std::size_t cols, std::mt19937& rng) {
  std::normal_distribution<double> normal(0.0, 1.0);
  Matrix m({rows, cols});
  for (double& v : m) v = normal(rng);
  return m;
}

std::vector<int> range(int begin, int end) {
  std::vector<int> r;
  for (int i = begin; i < end; ++i) r.push_back(i);
  return r;
}

// The keys and values of the chosen positions (indices into kp) of every sequence.
Matrix key_rows(const Matrix& m, const std::vector<int>& chosen, std::size_t sk, int batch) {
  Matrix out({batch * chosen.size(), m.shape(1)});
  for (int b = 0; b < batch; ++b) {
    for (std::size_t n = 0; n < chosen.size(); ++n) {
      xt::row(out, b * chosen.size() + n) = xt::row(m, b * sk + chosen[n]);
    }
  }
  return out;
}

// Part 11's merge, written here from its formula: the attention over A ∪ B from A's and B's.
dtk::AttentionOutput<double> merge(const dtk::AttentionOutput<double>& a,
                                   const dtk::AttentionOutput<double>& b, int heads) {
  dtk::AttentionOutput<double> r = a;
  const std::size_t d = a.out.shape(1) / heads;
  for (std::size_t i = 0; i < a.lse.shape(0); ++i) {
    for (int h = 0; h < heads; ++h) {
      const double la = a.lse(i, h), lb = b.lse(i, h), m = std::max(la, lb);
      if (m == -kInfinity) continue;
      const double wa = std::exp(la - m), wb = std::exp(lb - m);
      for (std::size_t c = h * d; c < (h + 1) * d; ++c) {
        r.out(i, c) = (wa * a.out(i, c) + wb * b.out(i, c)) / (wa + wb);
      }
      r.lse(i, h) = m + std::log(wa + wb);
    }
  }
  return r;
}

void check_same(Checks& check, const std::string& what, const Matrix& expected,
                const Matrix& actual, double tolerance = 1e-12) {
  check.close(what, expected, actual, tolerance, tolerance);
}

}  // namespace

TEST_CASE("kit | attention_block_forward: direct softmax attention, causal by position", "[gpt]") {
  dtk::testing::on_every_rank(1, [](Checks& check) {
    std::mt19937 rng(1);
    const int batch = 2, heads = 3, d = 4;
    // contiguous; zigzag's chunks 0 and 3 of 4 queries over all keys; queries after the keys
    const std::vector<std::pair<std::vector<int>, std::vector<int>>> cases = {
        {range(0, 70), range(0, 70)},
        {{0, 1, 2, 3, 12, 13, 14, 15}, range(0, 16)},
        {range(8, 16), range(0, 8)}};
    for (const auto& [qp, kp] : cases) {
      const Matrix q = random_matrix(batch * qp.size(), heads * d, rng);
      const Matrix k = random_matrix(batch * kp.size(), heads * d, rng);
      const Matrix v = random_matrix(batch * kp.size(), heads * d, rng);
      const auto expected = dtk::attention_block_forward_loops(q, k, v, qp, kp, batch, heads);
      const auto actual = dtk::attention_block_forward(q, k, v, qp, kp, batch, heads);
      const std::string name =
          std::to_string(qp.size()) + " queries, " + std::to_string(kp.size()) + " keys";
      check_same(check, name + ": out", expected.out, actual.out);
      check_same(check, name + ": lse", expected.lse, actual.lse);
    }
  });
}

namespace {

// Grouped-query k or v (rows, kv · d) widened to every query head: query head h's columns are
// key/value head h / (heads/kv)'s (Hugging Face's repeat_kv).
Matrix repeat_kv(const Matrix& m, int heads, int d) {
  const int kv = int(m.shape(1)) / d, group = heads / kv;
  Matrix wide({m.shape(0), std::size_t(heads * d)});
  for (std::size_t r = 0; r < m.shape(0); ++r) {
    for (int h = 0; h < heads; ++h) {
      for (int c = 0; c < d; ++c) wide(r, h * d + c) = m(r, (h / group) * d + c);
    }
  }
  return wide;
}

// The gradient of repeat_kv's input: each key/value head's columns summed over its query heads.
Matrix sum_over_groups(const Matrix& wide, int kv, int d) {
  const int heads = int(wide.shape(1)) / d, group = heads / kv;
  Matrix m = xt::zeros<double>({wide.shape(0), std::size_t(kv * d)});
  for (std::size_t r = 0; r < wide.shape(0); ++r) {
    for (int h = 0; h < heads; ++h) {
      for (int c = 0; c < d; ++c) m(r, (h / group) * d + c) += wide(r, h * d + c);
    }
  }
  return m;
}

}  // namespace

TEST_CASE(
    "kit | attention kernels, grouped-query: k and v of kv heads read by heads/kv query heads each",
    "[gpt]") {
  dtk::testing::on_every_rank(1, [](Checks& check) {
    std::mt19937 rng(4);
    const int batch = 2, heads = 4, d = 3;
    const std::vector<int> qp = {0, 1, 2, 3, 12, 13, 14, 15}, kp = range(0, 16);
    for (const int kv : {1, 2}) {
      const std::string name = std::to_string(kv) + " key/value heads: ";
      const Matrix q = random_matrix(batch * qp.size(), heads * d, rng);
      const Matrix k = random_matrix(batch * kp.size(), kv * d, rng);
      const Matrix v = random_matrix(batch * kp.size(), kv * d, rng);
      const Matrix dout = random_matrix(batch * qp.size(), heads * d, rng);
      const Matrix wide_k = repeat_kv(k, heads, d), wide_v = repeat_kv(v, heads, d);
      // Against the loops, and against multi-head attention on the repeated keys and values.
      const auto loops = dtk::attention_block_forward_loops(q, k, v, qp, kp, batch, heads);
      const auto grouped = dtk::attention_block_forward(q, k, v, qp, kp, batch, heads);
      const auto wide = dtk::attention_block_forward(q, wide_k, wide_v, qp, kp, batch, heads);
      check_same(check, name + "out against the loops", loops.out, grouped.out);
      check_same(check, name + "out against repeated keys", wide.out, grouped.out);
      check_same(check, name + "lse against repeated keys", wide.lse, grouped.lse);
      // The backward: dq as multi-head's, dk and dv its sums over each group of query heads.
      const auto g = dtk::attention_block_backward(q, k, v, grouped.out, grouped.lse, dout, qp, kp,
                                                   batch, heads);
      const auto w = dtk::attention_block_backward(q, wide_k, wide_v, wide.out, wide.lse, dout, qp,
                                                   kp, batch, heads);
      check_same(check, name + "dq", w.dq, g.dq);
      check_same(check, name + "dk summed over its query heads", sum_over_groups(w.dk, kv, d),
                 g.dk);
      check_same(check, name + "dv summed over its query heads", sum_over_groups(w.dv, kv, d),
                 g.dv);
    }
  });
}

TEST_CASE(
    "kit | attention_block_forward: blocks of keys merged give all keys; no key: lse -inf, out 0",
    "[gpt]") {
  dtk::testing::on_every_rank(1, [](Checks& check) {
    std::mt19937 rng(2);
    const int batch = 2, heads = 2, d = 3;
    const std::vector<int> qp = {0, 1, 2, 3, 12, 13, 14, 15}, kp = range(0, 16);
    const Matrix q = random_matrix(batch * qp.size(), heads * d, rng);
    const Matrix k = random_matrix(batch * kp.size(), heads * d, rng);
    const Matrix v = random_matrix(batch * kp.size(), heads * d, rng);
    const auto whole = dtk::attention_block_forward(q, k, v, qp, kp, batch, heads);
    // Keys split as a ring of 2 zigzag ranks holds them: {0-3, 12-15} and {4-11}.
    const std::vector<int> a = {0, 1, 2, 3, 12, 13, 14, 15}, b = range(4, 12);
    const auto part_a = dtk::attention_block_forward(
        q, key_rows(k, a, 16, batch), key_rows(v, a, 16, batch), qp, a, batch, heads);
    const auto part_b = dtk::attention_block_forward(
        q, key_rows(k, b, 16, batch), key_rows(v, b, 16, batch), qp, b, batch, heads);
    // Queries 0-3 see none of block b's keys.
    for (int bq = 0; bq < batch; ++bq) {
      for (int i = 0; i < 4; ++i) {
        for (int h = 0; h < heads; ++h) {
          check.that(part_b.lse(bq * 8 + i, h) == -kInfinity,
                     "a query that sees no key has lse -inf");
        }
        for (int c = 0; c < heads * d; ++c) {
          check.that(part_b.out(bq * 8 + i, c) == 0.0, "a query that sees no key has out 0");
        }
      }
    }
    const auto merged = merge(part_a, part_b, heads);
    check_same(check, "merged out", whole.out, merged.out);
    check_same(check, "merged lse", whole.lse, merged.lse);
  });
}

namespace {

// Σ out ⊙ weights: a loss whose gradient with respect to out is `weights`.
double weighted_out(const Matrix& q, const Matrix& k, const Matrix& v, const std::vector<int>& qp,
                    const std::vector<int>& kp, int batch, int heads, const Matrix& weights) {
  return xt::sum(dtk::attention_block_forward(q, k, v, qp, kp, batch, heads).out * weights)();
}

}  // namespace

TEST_CASE("kit | attention_block_backward: finite differences, and blocks of keys sum to all keys",
          "[gpt]") {
  dtk::testing::on_every_rank(1, [](Checks& check) {
    std::mt19937 rng(3);
    const int batch = 2, heads = 2, d = 3;
    const std::vector<int> qp = range(0, 9), kp = range(0, 9);
    Matrix q = random_matrix(batch * 9, heads * d, rng),
           k = random_matrix(batch * 9, heads * d, rng),
           v = random_matrix(batch * 9, heads * d, rng);
    const Matrix dout = random_matrix(batch * 9, heads * d, rng);
    const auto fwd = dtk::attention_block_forward(q, k, v, qp, kp, batch, heads);
    const auto grads =
        dtk::attention_block_backward(q, k, v, fwd.out, fwd.lse, dout, qp, kp, batch, heads);
    const double eps = 1e-6;
    const std::vector<std::pair<Matrix*, const Matrix*>> inputs = {
        {&q, &grads.dq}, {&k, &grads.dk}, {&v, &grads.dv}};
    const char* names[] = {"dq", "dk", "dv"};
    for (std::size_t n = 0; n < inputs.size(); ++n) {
      Matrix& x = *inputs[n].first;
      Matrix numeric = xt::zeros<double>(x.shape());
      for (std::size_t i = 0; i < x.size(); ++i) {
        const double kept = x.data()[i];
        x.data()[i] = kept + eps;
        const double plus = weighted_out(q, k, v, qp, kp, batch, heads, dout);
        x.data()[i] = kept - eps;
        const double minus = weighted_out(q, k, v, qp, kp, batch, heads, dout);
        x.data()[i] = kept;
        numeric.data()[i] = (plus - minus) / (2 * eps);
      }
      check.close(std::string(names[n]) + " against finite differences", numeric, *inputs[n].second,
                  1e-6, 1e-7);
    }
    // Keys in two blocks, {0, 1, 2, 6, 7, 8} and {3, 4, 5}: the final out and lse, each block's dq
    // summed, each block's dk and dv the rows of its keys.
    const std::vector<int> a = {0, 1, 2, 6, 7, 8}, b = {3, 4, 5};
    Matrix dq_sum = xt::zeros<double>(q.shape());
    for (const auto* block : {&a, &b}) {
      const auto part = dtk::attention_block_backward(q, key_rows(k, *block, 9, batch),
                                                      key_rows(v, *block, 9, batch), fwd.out,
                                                      fwd.lse, dout, qp, *block, batch, heads);
      dq_sum += part.dq;
      check_same(check, "a block's dk", key_rows(grads.dk, *block, 9, batch), part.dk);
      check_same(check, "a block's dv", key_rows(grads.dv, *block, 9, batch), part.dv);
    }
    check_same(check, "dq summed over the blocks", grads.dq, dq_sum);
  });
}

namespace {

// loss = Σ cross-entropy / loss_tokens + load-balancing losses, as the model defines it.
double model_loss(dtk::gpt::Gpt<double>& model, const dtk::gpt::GptBatch& batch) {
  const dtk::gpt::GptLoss loss = model.forward(batch);
  return loss.cross_entropy_sum / batch.loss_tokens + loss.aux_loss;
}

dtk::gpt::GptConfig small_config(int experts, int top_k) {
  dtk::gpt::GptConfig config;
  config.vocab_size = 64;
  config.seq_len = 6;
  config.layers = 2;
  config.hidden = 8;
  config.heads = 2;
  config.experts = experts;
  config.top_k = top_k;
  config.aux_loss_coef = 0.1;
  return config;
}

// A Llama of small_config's shape: one key/value head for its two query heads.
dtk::gpt::GptConfig small_llama() {
  dtk::gpt::GptConfig config = small_config(0, 1);
  config.arch = dtk::gpt::Architecture::Llama;
  config.kv_heads = 1;
  return config;
}

void check_model_gradients(Checks& check, const dtk::gpt::GptConfig& config) {
  dtk::gpt::Gpt<double> model(config, dtk::gpt::one_rank_layout(config), 7);
  std::mt19937 rng(5);
  std::normal_distribution<double> normal(0.0, 0.5);
  for (auto* p : model.parameters()) {
    for (double& v : p->value) v += normal(rng);
  }
  dtk::gpt::GptBatch batch;
  batch.batch = 2;
  batch.positions = range(0, 5);
  batch.tokens = {3, 1, 4, 1, 5, 9, 2, 6, 5, 3};
  batch.targets = {1, 4, 1, 5, 9, 2, 6, 5, 3, 5};
  batch.loss_tokens = 10;
  model.forward(batch);
  model.zero_grad();
  model.backward();
  const double eps = 1e-6;
  report_first_few(check, [&](Checks& all) {
    for (auto* p : model.parameters()) {
      // A few entries of each parameter: its first, its last and one between.
      for (const std::size_t i : {std::size_t(0), p->value.size() / 2, p->value.size() - 1}) {
        const double kept = p->value.data()[i];
        p->value.data()[i] = kept + eps;
        const double plus = model_loss(model, batch);
        p->value.data()[i] = kept - eps;
        const double minus = model_loss(model, batch);
        p->value.data()[i] = kept;
        const double numeric = (plus - minus) / (2 * eps), analytic = p->grad.data()[i];
        all.that(std::abs(numeric - analytic) <= 1e-6 + 1e-5 * std::abs(numeric),
                 p->name + "[" + std::to_string(i) + "]: backward gives " +
                     std::to_string(analytic) + ", finite differences " + std::to_string(numeric));
      }
    }
  });
}

}  // namespace

TEST_CASE("kit | Gpt<double>: every parameter's gradient equals finite differences", "[gpt]") {
  dtk::testing::on_every_rank(1, [](Checks& check) {
    check_model_gradients(check, small_config(0, 1));
    check_model_gradients(check, small_config(4, 2));
    check_model_gradients(check, small_llama());
  });
}

namespace {

// Two micro-batches of two sequences each (of 5 positions of the small model's 6).
dtk::gpt::GptBatch micro_batch(int which) {
  dtk::gpt::GptBatch batch;
  batch.batch = 2;
  batch.positions = range(0, 5);
  batch.tokens = which == 0 ? dtk::gpt::Tokens{3, 1, 4, 1, 5, 9, 2, 6, 5, 3}
                            : dtk::gpt::Tokens{2, 7, 1, 8, 2, 8, 1, 8, 2, 8};
  batch.targets = which == 0 ? dtk::gpt::Tokens{1, 4, 1, 5, 9, 2, 6, 5, 3, 5}
                             : dtk::gpt::Tokens{7, 1, 8, 2, 8, 1, 8, 2, 8, 4};
  batch.loss_tokens = 20;
  return batch;
}

// Every parameter's gradient after running `order`: (slot, micro-batch) forwards (F) and
// backwards (B), the gradients zeroed first.
std::vector<double> gradients_after(const dtk::gpt::GptConfig& config, const std::string& order) {
  dtk::gpt::Gpt<double> model(config, dtk::gpt::one_rank_layout(config), 7);
  const dtk::gpt::GptBatch batches[2] = {micro_batch(0), micro_batch(1)};
  model.zero_grad();
  for (std::size_t i = 0; i + 1 < order.size(); i += 2) {
    const int mb = order[i + 1] - '0';
    if (order[i] == 'F') model.forward(batches[mb], /*slot=*/mb);
    if (order[i] == 'B') model.backward(/*slot=*/mb);
  }
  std::vector<double> all;
  for (auto* p : model.parameters()) all.insert(all.end(), p->grad.begin(), p->grad.end());
  return all;
}

}  // namespace

TEST_CASE("kit | Gpt<double>: micro-batches in flight keep their own activations", "[gpt]") {
  dtk::testing::on_every_rank(1, [](Checks& check) {
    for (const int experts : {0, 4}) {
      const dtk::gpt::GptConfig config = small_config(experts, experts ? 2 : 1);
      const std::vector<double> one_at_a_time = gradients_after(config, "F0B0F1B1");
      const std::vector<double> in_flight = gradients_after(config, "F0F1B0B1");
      check.that(one_at_a_time == in_flight,
                 std::string(experts ? "mixture of experts" : "dense") +
                     ": the gradients of F0 F1 B0 B1 (two micro-batches in flight, slots 0 and "
                     "1) differ from those of F0 B0 F1 B1");
    }
  });
}

namespace {

// The loss and every gradient of the small model cut into stages at `cuts` (piece boundaries,
// from 0 to L + 2), two micro-batches in flight: each stage's stream handed on as a pipeline
// stage would receive it. Parameters in the whole model's order.
std::pair<double, std::map<std::string, std::vector<double>>> staged_run(
    const dtk::gpt::GptConfig& config, const std::vector<int>& cuts) {
  std::vector<std::unique_ptr<dtk::gpt::Gpt<double>>> stages;
  for (std::size_t i = 0; i + 1 < cuts.size(); ++i) {
    dtk::gpt::GptLayout layout = dtk::gpt::one_rank_layout(config);
    layout.piece_begin = cuts[i];
    layout.piece_end = cuts[i + 1];
    stages.push_back(std::make_unique<dtk::gpt::Gpt<double>>(config, layout, 7));
    stages.back()->zero_grad();
  }
  const dtk::gpt::GptBatch batches[2] = {micro_batch(0), micro_batch(1)};
  double loss = 0;
  std::vector<std::vector<xt::xtensor<double, 2>>> streams(2);  // what each stage received
  for (int mb = 0; mb < 2; ++mb) {
    xt::xtensor<double, 2> stream;
    for (auto& stage : stages) {
      streams[mb].push_back(stream);
      const dtk::gpt::GptLoss part = stage->forward(batches[mb], streams[mb].back(), mb);
      loss += part.cross_entropy_sum / batches[mb].loss_tokens + part.aux_loss;
      if (!stage->layout().holds_head(config)) stream = stage->stream_output();
    }
  }
  for (int mb = 0; mb < 2; ++mb) {
    xt::xtensor<double, 2> grad;
    for (auto stage = stages.rbegin(); stage != stages.rend(); ++stage) {
      (*stage)->backward(grad, mb);
      if (!(*stage)->layout().holds_embedding()) grad = (*stage)->stream_input_grad();
    }
  }
  std::map<std::string, std::vector<double>> grads;
  for (auto& stage : stages) {
    for (auto* p : stage->parameters()) grads[p->name].assign(p->grad.begin(), p->grad.end());
  }
  return {loss, grads};
}

}  // namespace

TEST_CASE("kit | Gpt<double>: cut into a pipeline's stages, the same loss and gradients", "[gpt]") {
  dtk::testing::on_every_rank(1, [](Checks& check) {
    for (const int experts : {0, 4}) {
      const dtk::gpt::GptConfig config = small_config(experts, experts ? 2 : 1);
      const auto whole = staged_run(config, {0, 4});
      // The embedding with block 0; block 1; the head. Then the embedding alone; both blocks
      // with the head.
      for (const std::vector<int>& cuts : {std::vector<int>{0, 2, 3, 4}, {0, 1, 4}}) {
        const auto staged = staged_run(config, cuts);
        std::string name = experts ? "mixture of experts" : "dense";
        for (const int cut : cuts) name += " " + std::to_string(cut);
        check.that(staged.first == whole.first, name + ": the loss differs from the whole model's");
        check.that(staged.second == whole.second,
                   name + ": the gradients differ from the whole model's");
      }
    }
  });
}

namespace {

// A bf16 run's rounding, as gpt_train binds it: Part 16.1's to_bf16 (the reference's) on each.
void round_to_bf16(const float* values, std::size_t count, std::uint16_t* bits) {
  for (std::size_t i = 0; i < count; ++i) bits[i] = dtk::to_bf16(values[i]);
}

struct FloatRun {
  std::size_t activations_after_forward = 0, activations_after_backward = 0;
  std::vector<float> grads;  // every parameter's, in order
};

// The small model in float, two micro-batches in `order` (as gradients_after's), its activations
// kept as bf16 or not, with the recomputation asked.
FloatRun float_run(const dtk::gpt::GptConfig& config, const std::string& order, bool bf16,
                   dtk::gpt::Recompute recompute = dtk::gpt::Recompute::None) {
  dtk::gpt::GptLayout layout = dtk::gpt::one_rank_layout(config);
  if (bf16) layout.keep_bf16 = round_to_bf16;
  layout.recompute = recompute;
  dtk::gpt::Gpt<float> model(config, layout, 7);
  const dtk::gpt::GptBatch batches[2] = {micro_batch(0), micro_batch(1)};
  FloatRun run;
  model.zero_grad();
  for (std::size_t i = 0; i + 1 < order.size(); i += 2) {
    const int mb = order[i + 1] - '0';
    if (order[i] == 'F') model.forward(batches[mb], mb);
    if (order[i] == 'B') model.backward(mb);
    if (i == 0) run.activations_after_forward = model.activation_bytes();
  }
  run.activations_after_backward = model.activation_bytes();
  for (auto* p : model.parameters())
    run.grads.insert(run.grads.end(), p->grad.begin(), p->grad.end());
  return run;
}

// ‖a − b‖ / ‖b‖, in double.
double relative_difference(const std::vector<float>& a, const std::vector<float>& b) {
  double difference = 0, size = 0;
  for (std::size_t i = 0; i < b.size(); ++i) {
    difference += (double(a[i]) - b[i]) * (double(a[i]) - b[i]);
    size += double(b[i]) * b[i];
  }
  return std::sqrt(difference / size);
}

}  // namespace

// bf16_store.hpp: a bf16 run holds what the blocks and the head keep as bf16 between the passes.
TEST_CASE("kit | Gpt<float> keeping bf16 activations: 2 bytes a kept value, near float's gradients",
          "[gpt]") {
  dtk::testing::on_every_rank(1, [](Checks& check) {
    const dtk::gpt::GptConfig config = small_config(0, 1);
    // One micro-batch (N = 10 rows): each block keeps 16 N h values (two LayerNorms' x̂ and y,
    // q, k, v and the attention's out, the MLP's x · W1 + b1 and its GELU), the head ln_f's x̂
    // and y and the logits' gradient (N V); the statistics stay float: each LayerNorm's 1/σ (N)
    // and the attention's log-sum-exp (N a).
    const std::size_t N = 10, h = config.hidden, L = config.layers, V = config.vocab_size,
                      a = config.heads;
    const std::size_t kept = L * 16 * N * h + 2 * N * h + N * V;
    const std::size_t statistics = L * (2 * N + N * a) + N;
    const FloatRun plain = float_run(config, "F0B0", false);
    const FloatRun bf16 = float_run(config, "F0B0", true);
    check.that(plain.activations_after_forward == 4 * (kept + statistics),
               "float: " + std::to_string(plain.activations_after_forward) +
                   " bytes kept after the forward, expected " +
                   std::to_string(4 * (kept + statistics)));
    check.that(bf16.activations_after_forward == 2 * kept + 4 * statistics,
               "bf16: " + std::to_string(bf16.activations_after_forward) +
                   " bytes kept after the forward, expected " +
                   std::to_string(2 * kept + 4 * statistics) + " (2 a kept value, 4 a statistic)");
    check.that(bf16.activations_after_backward == 4 * statistics,
               "bf16: " + std::to_string(bf16.activations_after_backward) +
                   " bytes kept after the backward, expected the statistics' " +
                   std::to_string(4 * statistics) + ": the backward frees what it unpacked");
    // Rounded (the gradients differ from float's), by about bf16's precision (2^-8).
    const double relative = relative_difference(bf16.grads, plain.grads);
    check.that(relative > 0 && relative < 2e-2, "bf16: the gradients differ from float's by " +
                                                    std::to_string(relative) +
                                                    " (relative, L2), expected within (0, 0.02)");
    check.that(float_run(config, "F0B0", true).grads == bf16.grads,
               "bf16: a second run gives other gradients");
    // Two micro-batches in flight, a mixture of experts, full recomputation: the same bits as one
    // at a time, and near float's.
    for (const int experts : {0, 4}) {
      const dtk::gpt::GptConfig c = small_config(experts, experts ? 2 : 1);
      const std::string name = experts ? "mixture of experts" : "dense";
      check.that(float_run(c, "F0F1B0B1", true).grads == float_run(c, "F0B0F1B1", true).grads,
                 name + ", bf16: F0 F1 B0 B1 gives other gradients than F0 B0 F1 B1");
      for (const dtk::gpt::Recompute recompute :
           {dtk::gpt::Recompute::None, dtk::gpt::Recompute::Selective, dtk::gpt::Recompute::Full}) {
        const double off = relative_difference(float_run(c, "F0F1B0B1", true, recompute).grads,
                                               float_run(c, "F0F1B0B1", false, recompute).grads);
        check.that(off > 0 && off < 2e-2, name + ", recompute " + std::to_string(int(recompute)) +
                                              ", bf16: the gradients differ from float's by " +
                                              std::to_string(off) + ", expected within (0, 0.02)");
      }
    }
  });
}

namespace {

// The Hugging Face config.json of `c` (Part 4's keys), written to a file of its own.
std::string hugging_face_config(const dtk::gpt::GptConfig& c, const std::string& path) {
  std::ofstream file(path);
  if (c.llama()) {
    file << "{\"hidden_size\": " << c.hidden << ", \"intermediate_size\": " << c.mlp_width()
         << ", \"num_attention_heads\": " << c.heads
         << ", \"num_key_value_heads\": " << c.key_value_heads()
         << ", \"num_hidden_layers\": " << c.layers << ", \"vocab_size\": " << c.vocab_size
         << ", \"max_position_embeddings\": " << c.seq_len << "}";
  } else {
    file << "{\"model_type\": \"gpt2\", \"n_embd\": " << c.hidden << ", \"n_head\": " << c.heads
         << ", \"n_layer\": " << c.layers << ", \"vocab_size\": " << c.vocab_size
         << ", \"n_positions\": " << c.seq_len << ", \"tie_word_embeddings\": false}";
  }
  return path;
}

// Numbers one block keeps per row of one sequence of T positions, as the model counts them
// (its activation_bytes after a forward, in double).
double kept_per_row(const dtk::gpt::GptConfig& c) {
  dtk::gpt::Gpt<double> model(c, dtk::gpt::one_rank_layout(c), 7);
  dtk::gpt::GptBatch batch;
  batch.batch = 1;
  batch.positions = range(0, c.seq_len);
  batch.tokens = xt::arange<int>(0, c.seq_len) % c.vocab_size;
  batch.targets = (xt::arange<int>(0, c.seq_len) + 1) % c.vocab_size;
  batch.loss_tokens = c.seq_len;
  model.forward(batch);
  return double(model.first_block_activation_bytes()) / sizeof(double) / c.seq_len;
}

}  // namespace

// Part 4's peak memory is one layer's fp16 weights and the fp16 activations it keeps over T
// positions (handout, Part 4: GPT-2's 7h + a·s + 2i a position, a Llama's 6h + 2kv·d + a·s + 3i).
// The model keeps the same numbers but these: not the a·s probabilities (the kernels compute them
// again, as FlashAttention does) but lse (a numbers) and each norm's 1/σ (2), and GPT-2's second
// LayerNorm's x̂ (h), which Part 4 leaves out.
TEST_CASE("kit | the model's parameter, FLOP and memory counts are Part 4's of its config.json",
          "[gpt]") {
  dtk::testing::on_every_rank(1, [](Checks& check) {
    dtk::gpt::GptConfig gpt2;  // the defaults: V 128, T 128, L 4, h 256, a 4
    dtk::gpt::GptConfig llama = gpt2;
    llama.arch = dtk::gpt::Architecture::Llama;
    llama.kv_heads = 2;
    dtk::gpt::GptConfig mqa = llama;
    mqa.kv_heads = 1;
    const std::string path = "kit_gpt_part4_config.json";
    for (const auto& [name, c] :
         {std::pair{"GPT-2", gpt2}, {"Llama, 2 KV heads", llama}, {"Llama, multi-query", mqa}}) {
      const dtk::TrainingCost part4 =
          dtk::model_training_cost_analysis(hugging_face_config(c, path));
      check.equal(std::string(name) + ": parameters", part4.num_parameters,
                  dtk::gpt::parameter_count(c));
      // Part 4: one layer's forward over the T positions of one sequence.
      const double part4_flops = part4.num_tflops * 1e12,
                   flops = dtk::gpt::piece_flops(c)[1] * c.seq_len;
      check.that(std::abs(flops - part4_flops) <= 1e-12 * part4_flops,
                 std::string(name) + ": a block's forward FLOPs over T positions " +
                     std::to_string(flops) + ", Part 4's " + std::to_string(part4_flops));
      dtk::gpt::GptConfig fewer_layers = c;
      fewer_layers.layers -= 1;
      const double block_parameters =
          double(dtk::gpt::parameter_count(c)) - double(dtk::gpt::parameter_count(fewer_layers));
      const double part4_per_row =
          (part4.peak_memory_gb * 1e9 - 2 * block_parameters) / 2 / c.seq_len;
      const double a = c.heads, s = c.seq_len;
      const double expected = part4_per_row - a * s + a + 2 + (c.llama() ? 0 : c.hidden);
      const double kept = kept_per_row(c);
      check.that(std::abs(kept - expected) <= 1e-9 * expected,
                 std::string(name) + ": a block keeps " + std::to_string(kept) +
                     " numbers a row, Part 4's count with lse for the probabilities " +
                     std::to_string(expected));
    }
    std::remove(path.c_str());
  });
}
