// Cases that misbehave on purpose, to check the harness itself (see check_harness.sh).
#include "dtk_test.hpp"

// Only rank 2 finds a wrong value: the case must fail on every rank, reported once for rank 2.
TEST_CASE("harness: a failure on one rank fails the case", "[one_rank_fails]") {
  dtk::testing::on_every_rank(4, [](dtk::testing::Checks& check) {
    check.equal("the answer", 42, check.rank() == 2 ? 41 : 42);
  });
}

// Only rank 1 throws, before a collective the other ranks enter: still reported, no hang.
TEST_CASE("harness: an exception on one rank is reported", "[one_rank_throws]") {
  dtk::testing::on_every_rank(4, [](dtk::testing::Checks& check) {
    if (check.rank() == 1) throw std::runtime_error("rank 1 gave up");
  });
}

// Rank 0 skips a collective the others wait in: the watchdog must stop the program.
TEST_CASE("harness: a deadlock is stopped by the watchdog", "[deadlock]") {
  dtk::testing::on_every_rank(4, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    xt::xtensor<double, 1> one = xt::ones<double>({1}), sum = xt::zeros<double>({1});
    if (check.rank() != 0) world.Allreduce(one, sum);
  });
}
