// dp_averaging: data parallelism over uneven shares (14.5), two ways. A linear model learns y
// from x on p ranks, each holding its share of the examples (partition_examples), and is trained
//   - by gradient averaging: every step, each rank's mean gradient over its examples, averaged
//     over the ranks by weighted_gradient_average, then one optimizer step, the same on every
//     rank (what gpt_train's data parallelism does);
//   - by weight averaging: each rank steps its own optimizer on its own examples, and every K
//     steps (and after the last) the ranks' weights are averaged, weighted by their shares
//     (weighted_gradient_average again: a weighted mean is a weighted mean);
// and both are compared with the weights one rank holding every example reaches (and with the
// mistake 14.5 warns of: the ranks' mean gradients averaged as if their shares were equal). Which
// of the two equals one rank, for SGD and for Adam, with K = 1 and K > 1, is the question the
// handout asks (14.6): run it and see.
//
//   mpirun -n 3 ./dp_averaging                          SGD, weights averaged every step
//   mpirun -n 3 ./dp_averaging --optimizer adam
//   mpirun -n 3 ./dp_averaging --local_steps 4
//   mpirun -n 2 ./dp_averaging --shares 0.9,0.1
#include <cmath>
#include <functional>
#include <iomanip>
#include <iostream>
#include <map>
#include <random>
#include <sstream>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include <dtk/five_dimensional.hpp>

#include "command_line.hpp"

namespace {

using namespace dtk::command_line;
using Vector = xt::xtensor<double, 1>;

enum class Optimizer { Sgd, Adam };

struct Options {
  std::vector<double> shares;  // empty: p, p - 1, ..., 1 parts of p(p + 1) / 2
  Optimizer optimizer = Optimizer::Sgd;
  long local_steps = 1;  // K
  long steps = 40;
  long examples = 1200;
  long features = 8;
  double lr = 0;  // 0: the optimizer's default
  std::uint64_t seed = 1;
  bool help = false;
};

const char* const kHelp =
    "usage: mpirun -n P dp_averaging [options]\n"
    "Trains a linear model (mean squared error) on P data-parallel ranks of uneven shares, by\n"
    "gradient averaging and by weight averaging, and prints how far each lands from the weights\n"
    "one rank holding every example reaches (14.5's functions: partition_examples,\n"
    "share_sizes and weighted_gradient_average).\n\n"
    "  --shares F,F,...     each rank's fraction of the examples, P of them, summing to 1\n"
    "                       (default: P, P-1, ..., 1 parts of P(P+1)/2)\n"
    "  --optimizer O        sgd or adam (default sgd)\n"
    "  --local_steps K      weight averaging: steps each rank takes alone between two\n"
    "                       averages (default 1)\n"
    "  --steps N            optimizer steps (default 40)\n"
    "  --examples N         examples in all (default 1200)\n"
    "  --features N         the model's inputs (default 8)\n"
    "  --lr X               learning rate (default 0.05 for sgd, 0.01 for adam)\n"
    "  --seed N             the examples and the true weights (default 1)\n";

std::vector<double> parse_shares(const std::string& flag, const std::string& text) {
  std::vector<double> shares;
  std::stringstream list(text);
  for (std::string item; std::getline(list, item, ',');) {
    shares.push_back(parse_positive_number(flag, item, /*allow_zero=*/true));
  }
  if (shares.empty()) throw UsageError(flag + " expects fractions separated by commas");
  return shares;
}

Options parse(int argc, char** argv) {
  Options o;
  const std::map<std::string, FlagSetter> with_value = {
      {"--shares", [&](auto& f, auto& v) { o.shares = parse_shares(f, v); }},
      {"--optimizer",
       [&](auto& f, auto& v) {
         o.optimizer =
             parse_choice<Optimizer>(f, v, {{"sgd", Optimizer::Sgd}, {"adam", Optimizer::Adam}});
       }},
      {"--local_steps", [&](auto& f, auto& v) { o.local_steps = parse_positive(f, v); }},
      {"--steps", [&](auto& f, auto& v) { o.steps = parse_positive(f, v); }},
      {"--examples", [&](auto& f, auto& v) { o.examples = parse_positive(f, v); }},
      {"--features", [&](auto& f, auto& v) { o.features = parse_positive(f, v); }},
      {"--lr", [&](auto& f, auto& v) { o.lr = parse_positive_number(f, v); }},
      {"--seed", [&](auto& f, auto& v) { o.seed = parse_integer(f, v, 0); }},
  };
  parse_flags(argc, argv, with_value, o.help);
  if (o.lr == 0) o.lr = o.optimizer == Optimizer::Sgd ? 0.05 : 0.01;
  return o;
}

// The shares of `ranks` ranks: --shares, checked, or the default.
std::vector<double> shares_of(const Options& o, int ranks) {
  if (o.shares.empty()) {
    std::vector<double> shares;
    for (int r = 0; r < ranks; ++r) shares.push_back(2.0 * (ranks - r) / (ranks * (ranks + 1.0)));
    return shares;
  }
  if (static_cast<int>(o.shares.size()) != ranks) {
    throw UsageError("--shares gives " + std::to_string(o.shares.size()) + " fractions for " +
                     std::to_string(ranks) + (ranks == 1 ? " rank" : " ranks") +
                     ": one per rank (mpirun -n " + std::to_string(o.shares.size()) + ")");
  }
  double sum = 0;
  for (double share : o.shares) sum += share;
  if (std::abs(sum - 1) > 1e-9) {
    throw UsageError("--shares sum to " + std::to_string(sum) + ", not 1");
  }
  return o.shares;
}

// The examples: x uniform in [-1, 1]^features, y = x · w_true + noise. Every rank makes them all
// (from the seed), keeps its own for training and all of them for the one-rank reference.
struct Examples {
  xt::xtensor<double, 2> x;  // (examples, features)
  Vector y;                  // (examples)
};

Examples make_examples(const Options& o) {
  std::mt19937_64 bits(o.seed);
  const auto uniform = [&bits] { return double(bits() >> 11) * 0x1.0p-52 - 1; };  // [-1, 1)
  Vector w_true = xt::zeros<double>({std::size_t(o.features)});
  for (double& w : w_true) w = uniform();
  Examples e{xt::zeros<double>({std::size_t(o.examples), std::size_t(o.features)}),
             xt::zeros<double>({std::size_t(o.examples)})};
  for (long i = 0; i < o.examples; ++i) {
    double y = 0.1 * uniform();
    for (long j = 0; j < o.features; ++j) y += (e.x(i, j) = uniform()) * w_true(j);
    e.y(i) = y;
  }
  return e;
}

// Example i's error, x_i · w - y_i.
double error_of(const Examples& e, std::size_t i, const Vector& w) {
  return xt::sum(xt::row(e.x, i) * w)() - e.y(i);
}

// The mean over `rows` of the squared error's gradient, (x · w - y) x; NaN without rows (a mean
// of nothing), as a rank of share 0 has.
Vector mean_gradient(const Examples& e, const std::vector<std::size_t>& rows, const Vector& w) {
  Vector sum = xt::zeros<double>(w.shape());
  for (std::size_t i : rows) sum += error_of(e, i, w) * xt::row(e.x, i);
  return sum / double(rows.size());
}

double mean_loss(const Examples& e, const Vector& w) {
  double sum = 0;
  for (std::size_t i = 0; i < e.y.size(); ++i) {
    const double error = error_of(e, i, w);
    sum += error * error;
  }
  return 0.5 * sum / double(e.y.size());
}

// One optimizer's state: SGD has none; Adam its two moments (β1 0.9, β2 0.999, ε 1e-8).
class Stepper {
 public:
  Stepper(const Options& o, std::size_t size)
      : o_(o), m_(xt::zeros<double>({size})), v_(xt::zeros<double>({size})) {}

  void step(Vector& w, const Vector& gradient) {
    if (o_.optimizer == Optimizer::Sgd) {
      w -= o_.lr * gradient;
      return;
    }
    ++t_;
    m_ = 0.9 * m_ + 0.1 * gradient;
    v_ = 0.999 * v_ + 0.001 * gradient * gradient;
    const Vector m_hat = m_ / (1 - std::pow(0.9, t_)), v_hat = v_ / (1 - std::pow(0.999, t_));
    w -= o_.lr * m_hat / (xt::sqrt(v_hat) + 1e-8);
  }

 private:
  const Options& o_;
  Vector m_, v_;
  long t_ = 0;
};

struct Trained {
  Vector one_rank, gradient_averaged, weight_averaged, mean_of_means;
};

// The mistake 14.5 warns of, for comparison: the ranks' mean gradients averaged as equals.
Vector mean_of_means(const Vector& local_mean, dtk::Communicator& world) {
  Vector sum = local_mean;
  world.Allreduce(sum, sum);
  return sum / double(world.Get_size());
}

Trained train(const Options& o, const Examples& e, const std::vector<std::size_t>& mine,
              dtk::Communicator& world) {
  std::vector<std::size_t> all(e.y.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
  const Vector start = xt::zeros<double>({std::size_t(o.features)});
  Trained t{start, start, start, start};
  Stepper one(o, start.size()), averaged(o, start.size()), local(o, start.size()),
      unweighted(o, start.size());
  for (long step = 1; step <= o.steps; ++step) {
    one.step(t.one_rank, mean_gradient(e, all, t.one_rank));
    averaged.step(t.gradient_averaged,
                  dtk::weighted_gradient_average(mean_gradient(e, mine, t.gradient_averaged),
                                                 mine.size(), world));
    unweighted.step(t.mean_of_means, mean_of_means(mean_gradient(e, mine, t.mean_of_means), world));
    local.step(t.weight_averaged, mean_gradient(e, mine, t.weight_averaged));
    if (step % o.local_steps == 0 || step == o.steps) {
      t.weight_averaged = dtk::weighted_gradient_average(t.weight_averaged, mine.size(), world);
    }
  }
  return t;
}

std::string scientific(double x) {
  std::ostringstream text;
  text << std::setprecision(2) << std::scientific << x;
  return text.str();
}

void run(const Options& o, dtk::Communicator& world) {
  const int ranks = world.Get_size(), rank = world.Get_rank();
  const std::vector<double> shares = shares_of(o, ranks);
  const Examples e = make_examples(o);
  const std::vector<std::size_t> mine = dtk::partition_examples(e.y.size(), shares, o.seed, rank);
  const Trained t = train(o, e, mine, world);
  if (rank != 0) return;
  const std::vector<std::size_t> sizes = dtk::share_sizes(e.y.size(), shares);
  std::cout << "dp_averaging: " << ranks << " ranks, " << o.examples << " examples, shares";
  for (std::size_t r = 0; r < sizes.size(); ++r) {
    std::cout << " " << sizes[r] << " (" << std::setprecision(3) << shares[r] << ")";
  }
  std::cout << "\n"
            << o.steps << " steps of " << (o.optimizer == Optimizer::Sgd ? "sgd" : "adam")
            << ", lr " << o.lr << ", " << o.features << " features; weights averaged every "
            << o.local_steps << (o.local_steps == 1 ? " step" : " steps") << "\n\n"
            << "                     |w - w1| / |w1|   loss\n";
  const double norm = std::sqrt(xt::sum(t.one_rank * t.one_rank)());
  const auto line = [&](const char* name, const Vector& w) {
    const double distance = std::sqrt(xt::sum((w - t.one_rank) * (w - t.one_rank))()) / norm;
    std::cout << std::left << std::setw(21) << name << std::right << std::setw(15)
              << scientific(distance) << "   " << scientific(mean_loss(e, w)) << "\n";
  };
  line("one rank (w1)", t.one_rank);
  line("gradient averaging", t.gradient_averaged);
  line("weight averaging", t.weight_averaged);
  line("mean of the means", t.mean_of_means);
}

}  // namespace

int main(int argc, char** argv) {
  return run_mpi_program(argc, argv, "dp_averaging", [&](const dtk::Communicator& world) {
    const Options options = parse(argc, argv);
    if (options.help) {
      if (world.Get_rank() == 0) std::cout << kHelp;
      return;
    }
    dtk::Communicator dp_comm = world.Split(0, world.Get_rank());  // a copy we may send on
    run(options, dp_comm);
  });
}
