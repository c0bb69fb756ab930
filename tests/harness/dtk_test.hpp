// The test harness shared by every dtk test: Catch2 v2 made safe for MPI.
//
// Every rank runs every test case. Inside a case, put all the work in on_every_rank(): the body
// calls the functions under test (and so communicates) on every rank, records what it finds in
// a Checks object instead of asserting, and only then are the findings of all ranks combined.
// A failure on any rank fails the case on every rank and is reported once, by rank 0, naming the
// ranks and showing expected and actual values. An exception (a NotImplemented stub, say) is
// recorded the same way, so a failing rank never leaves the others waiting in a collective.
// One mistake tends to fail many checks alike, so a program's first failing case shows its first
// finding whole and its other findings by their first line; every later failing case is one line
// (on_every_rank). A check that knows what a known mistake gives names it (KnownMistake).
//
//   TEST_CASE("naive_collect_forward_input: ...", "[part3]") {
//     dtk::testing::on_every_rank(4, [](dtk::testing::Checks& check) {
//       auto full = dtk::naive_collect_forward_input<double>(x, mp_comm, 4);
//       check.close("collected input", expected, full);
//     });
//   }
#pragma once

#include <dtk/communicator.hpp>
#include <dtk/not_implemented.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>
#include <xtensor/xio.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

namespace dtk::testing {

// What a result would be after a known mistake, and the mistake in words: a check that finds
// exactly this value names the mistake in its finding ("This is exactly what <name> gives."), as
// the grader's feedback does.
template <class V>
struct KnownMistake {
  std::string name;
  V value;
};
template <class V>
using KnownMistakes = std::vector<KnownMistake<V>>;

// " This is exactly what <name> gives." for the mistakes whose value `gives(value)` accepts (", or"
// between several: on a small layout two mistakes can give the same value), else "".
template <class V, class Gives>
std::string known_mistake_if(const KnownMistakes<V>& mistakes, Gives gives) {
  std::string names;
  for (const KnownMistake<V>& mistake : mistakes) {
    if (gives(mistake.value)) names += (names.empty() ? "" : ", or ") + mistake.name;
  }
  return names.empty() ? "" : " This is exactly what " + names + " gives.";
}

// The same for a value compared exactly (a list of indices, a table).
template <class V>
std::string known_mistake(const KnownMistakes<V>& mistakes, const V& actual) {
  return known_mistake_if(mistakes, [&](const V& value) { return value == actual; });
}

template <class T>
struct Same {  // makes a parameter's type follow from the others' (C++20's std::type_identity)
  using type = T;
};

// What one rank found wrong during one test case.
class Checks {
 public:
  explicit Checks(int rank) : rank_(rank) {}

  int rank() const { return rank_; }
  const std::vector<std::string>& failures() const { return failures_; }

  // Records `message` as a failure unless `ok`.
  void that(bool ok, const std::string& message) {
    if (!ok) failures_.push_back(message);
  }

  // Exact equality of two integers (dimensions, indices, sizes).
  void equal(const std::string& what, long long expected, long long actual) {
    that(expected == actual,
         what + ": expected " + std::to_string(expected) + ", got " + std::to_string(actual));
  }

  // Same shape and |actual - expected| <= atol + rtol * |expected| element-wise.
  template <class E, class A>
  void close(const std::string& what, const E& expected, const A& actual, double rtol = 1e-6,
             double atol = 1e-9) {
    close(what, expected, actual, rtol, atol, KnownMistakes<E>{});
  }

  // The same, and a finding that matches a known mistake's value (by the same rule) names it.
  template <class E, class A>
  void close(const std::string& what, const E& expected, const A& actual, double rtol, double atol,
             const KnownMistakes<typename Same<E>::type>& mistakes) {
    if (same_shape(expected, actual) && xt::allclose(actual, expected, rtol, atol)) return;
    record_difference(
        what, expected, actual,
        [&](double e, double a) { return std::abs(a - e) <= atol + rtol * std::abs(e); }, mistakes);
  }

  // Same shape and near(expected value, actual value) for every element: for a test whose rule
  // differs from close()'s (infinities, a tolerance of its own); shown as close() shows it.
  template <class E, class A, class Near>
  void close_by(const std::string& what, const E& expected, const A& actual, Near near,
                const KnownMistakes<typename Same<E>::type>& mistakes = {}) {
    if (same_shape(expected, actual) && all_near(expected, actual, near)) return;
    record_difference(what, expected, actual, near, mistakes);
  }

 private:
  template <class E, class A>
  static bool same_shape(const E& expected, const A& actual) {
    return std::equal(expected.shape().begin(), expected.shape().end(), actual.shape().begin(),
                      actual.shape().end());
  }

  // Of two tensors of the same shape: whether near(expected value, actual value) everywhere.
  template <class E, class A, class Near>
  static bool all_near(const E& expected, const A& actual, Near near) {
    for (std::size_t i = 0; i < expected.size(); ++i) {
      if (!near(expected.flat(i), actual.flat(i))) return false;
    }
    return true;
  }

  // Records that `actual` is not `expected`. The first line says how: the shapes, or how many
  // values are not near(expected, actual) and the first of them, and the known mistake it is, if
  // any; then both tensors whole, or, too many values to read whole, the first difference's row
  // in both (a finding shown by its first line alone still says what differs).
  template <class E, class A, class Near, class M>
  void record_difference(const std::string& what, const E& expected, const A& actual, Near near,
                         const KnownMistakes<M>& mistakes) {
    const bool shapes_agree = same_shape(expected, actual);
    std::ostringstream text;
    std::size_t first = 0;
    if (shapes_agree) {
      std::size_t wrong = 0;
      for (std::size_t i = 0; i < expected.size(); ++i) {
        if (!near(expected.flat(i), actual.flat(i)) && wrong++ == 0) first = i;
      }
      text << what << ": values differ (" << wrong << " of " << expected.size() << " in "
           << shape_text(expected) << "; the first at " << index_text(expected, first)
           << ": expected " << expected.flat(first) << ", got " << actual.flat(first) << ").";
    } else {
      text << what << ": shapes differ: expected " << shape_text(expected) << ", got "
           << shape_text(actual) << ".";
    }
    text << known_mistake_if(mistakes, [&](const M& value) {
      return same_shape(value, actual) && all_near(value, actual, near);
    });
    if (expected.size() <= kPrintedWhole && actual.size() <= kPrintedWhole) {
      // Lines short enough that Catch, which indents and wraps at 79 columns, keeps them whole.
      text << "\n  expected " << shape_text(expected) << ":\n"
           << xt::print_options::line_width(kLineWidth) << expected << "\n  actual "
           << shape_text(actual) << ":\n"
           << xt::print_options::line_width(kLineWidth) << actual;
    } else if (shapes_agree && expected.dimension() == 2) {
      // Each row on one line: its first and last values (xtensor's summary).
      const std::size_t row = first / expected.shape(1);
      text << "\n  row " << row << " expected: " << xt::print_options::threshold(8)
           << xt::view(expected, row, xt::all()) << "\n  row " << row
           << " actual:   " << xt::print_options::threshold(8) << xt::view(actual, row, xt::all());
    }
    failures_.push_back(text.str());
  }

  // "(2, 5)" for element 2 · width + 5 of a matrix, "flat index 7" otherwise.
  template <class C>
  static std::string index_text(const C& c, std::size_t flat) {
    if (c.dimension() != 2) return "flat index " + std::to_string(flat);
    return "(" + std::to_string(flat / c.shape(1)) + ", " + std::to_string(flat % c.shape(1)) + ")";
  }

  template <class C>
  static std::string shape_text(const C& c) {
    std::string text = "(";
    for (std::size_t i = 0; i < c.shape().size(); ++i) {
      text += (i ? ", " : "") + std::to_string(c.shape()[i]);
    }
    return text + ")";
  }

  // Tensors up to this many values are printed whole when they differ; larger ones by their
  // first difference (a failing case of 200 rows of 33 would print thousands of lines).
  static constexpr std::size_t kPrintedWhole = 256;
  static constexpr int kLineWidth = 68;

  int rank_;
  std::vector<std::string> failures_;
};

// Runs `body` on every rank (the world must have exactly `ranks` ranks), then fails the current
// test case on every rank if any rank recorded a failure or threw. Collective.
void on_every_rank(int ranks, const std::function<void(Checks&)>& body);

// Records a failure unless f() throws std::invalid_argument whose message names the function:
// `call` is the call as written, e.g. "partition_layers({1, 2, 3}, 0)", and the message must
// contain its text before the first '('.
template <class F>
void expect_invalid_argument(Checks& check, const std::string& call, F f) {
  const std::string function = call.substr(0, call.find('('));
  try {
    f();
    check.that(false, call + " returned, but should throw std::invalid_argument");
  } catch (const std::invalid_argument& e) {
    check.that(std::string(e.what()).find(function) != std::string::npos,
               call + " threw std::invalid_argument(\"" + e.what() + "\"): name " + function +
                   " in the message");
  }
}

// Runs `body` with a Checks of its own and passes on its first few failures, then how many more
// there were: one mistake tends to fail every case of a loop alike.
template <class Body>
void report_first_few(Checks& check, Body body) {
  constexpr std::size_t kShown = 3;
  Checks all(check.rank());
  body(all);
  const std::vector<std::string>& failures = all.failures();
  for (std::size_t i = 0; i < std::min(failures.size(), kShown); ++i) {
    check.that(false, failures[i]);
  }
  if (failures.size() > kShown) {
    check.that(false, "... and " + std::to_string(failures.size() - kShown) + " more like these");
  }
}

}  // namespace dtk::testing
