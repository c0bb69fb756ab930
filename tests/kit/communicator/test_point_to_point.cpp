// Kit self-test of the Communicator's point-to-point calls (assignment 2), on 2 ranks: Send,
// Recv and Sendrecv in container and pointer forms deliver the values, add exactly the bytes
// they send to total_bytes_transferred() (Recv adds none), and a receive buffer longer than
// the message throws std::runtime_error naming both lengths.
#include "dtk_test.hpp"

#include <stdexcept>
#include <string>

namespace {
constexpr int kRanks = 2;
}

TEST_CASE("Communicator | Send and Recv, container and pointer forms", "[p2p]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    const int r = world.Get_rank();
    xt::xtensor<double, 1> values = {1.5, 2.5, 3.5};
    xt::xtensor<double, 1> got = xt::zeros<double>({3});
    xt::xtensor<std::int64_t, 1> part = xt::zeros<std::int64_t>({2});
    const xt::xtensor<std::int64_t, 1> longs = {7, 8, 9, 10};
    if (r == 0) {
      world.Send(values, 1, /*tag=*/3);
      world.Send(longs.data() + 1, 2, 1);  // elements 1 and 2 only
      check.equal("bytes after Send of 3 doubles and 2 int64", 3 * 8 + 2 * 8,
                  world.total_bytes_transferred());
    } else {
      world.Recv(got, 0, /*tag=*/3);
      world.Recv(part.data(), 2, 0);
      check.close("Recv (container)", values, got);
      check.close("Recv (pointer, part of a buffer)", xt::xtensor<std::int64_t, 1>{8, 9}, part);
      check.equal("bytes after two Recv", 0, world.total_bytes_transferred());
    }
  });
}

TEST_CASE("Communicator | Sendrecv swaps, container and pointer forms", "[p2p]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    const int r = world.Get_rank(), other = 1 - r;
    // 1 MB each way: a Send/Recv pair in this order would deadlock, Sendrecv must not.
    const std::size_t n = (1 << 20) / 4;
    xt::xtensor<float, 1> mine = xt::full_like(xt::xtensor<float, 1>::from_shape({n}), r + 1.0f);
    xt::xtensor<float, 1> theirs = xt::zeros<float>({n});
    world.Sendrecv(mine, other, theirs, other);
    check.that(theirs(0) == other + 1.0f && theirs(n - 1) == other + 1.0f,
               "Sendrecv (container): expected the other rank's values");
    std::int32_t out[3] = {10 * r, 10 * r + 1, 10 * r + 2}, in[2] = {-1, -1};
    world.Sendrecv(out + 1, 2, other, in, 2, other);
    check.equal("Sendrecv (pointer) first value", 10 * other + 1, in[0]);
    check.equal("Sendrecv (pointer) second value", 10 * other + 2, in[1]);
    check.equal("bytes after the two Sendrecv", n * 4 + 2 * 4, world.total_bytes_transferred());
  });
}

TEST_CASE("Communicator | Recv of a shorter message throws, naming both lengths", "[p2p]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    xt::xtensor<float, 1> two = {1, 2};
    xt::xtensor<float, 1> five = xt::zeros<float>({5});
    if (world.Get_rank() == 0) {
      world.Send(two, 1);
    } else {
      std::string message;
      try {
        world.Recv(five, 0);
      } catch (const std::runtime_error& e) {
        message = e.what();
      }
      check.that(message ==
                     "Communicator::Recv: expected a message of 5 elements from rank 0, "
                     "but it sent 2 elements",
                 "unexpected error message: '" + message + "'");
    }
  });
}
