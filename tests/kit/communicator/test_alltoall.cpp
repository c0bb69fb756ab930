// Kit self-test of the Communicator's all-to-all calls (assignment 3, Part 12), on 3 ranks:
// Alltoall and Alltoallv deliver block q of rank s as block s of rank q (blocks of more than
// 1 MB, of 0 elements, of different sizes), add to total_bytes_transferred() the bytes of the
// blocks for the other ranks only, and refuse bad counts with std::invalid_argument: sizes that
// do not add up on one rank, and recv_counts that disagree with what the senders send, on every
// rank at once with the same message.
#include "dtk_test.hpp"

#include <stdexcept>
#include <string>
#include <vector>

namespace {

constexpr int kRanks = 3;

// Element i of the block rank s sends rank q: 1000000 s + 10000 q + i (it says where it is from).
double value_sent(int s, int q, int i) { return 1000000.0 * s + 10000.0 * q + i; }

// The message of the std::invalid_argument f() throws, or "" if it returns.
template <class F>
std::string invalid_argument_of(F f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE(
    "Communicator | Alltoall: block q of rank s lands as block s of rank q; bytes of the "
    "other ranks' blocks (1 MB blocks)",
    "[alltoall]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    const int r = world.Get_rank();
    const int block = (1 << 20) / 8 + 3;  // doubles: more than 1 MB a block
    xt::xtensor<double, 1> send = xt::xtensor<double, 1>::from_shape({std::size_t(kRanks * block)});
    for (int q = 0; q < kRanks; ++q) {
      for (int i = 0; i < block; ++i) send(q * block + i) = value_sent(r, q, i);
    }
    xt::xtensor<double, 1> recv = xt::zeros<double>(send.shape());
    world.Alltoall(send, recv);
    int wrong = 0;
    for (int s = 0; s < kRanks; ++s) {
      for (int i = 0; i < block; ++i) wrong += recv(s * block + i) != value_sent(s, r, i);
    }
    check.equal("elements of recv that are not block r of their sender's send", 0, wrong);
    check.equal("bytes after the Alltoall: (p - 1) blocks", (kRanks - 1) * block * 8,
                world.total_bytes_transferred());
  });
}

TEST_CASE(
    "Communicator | Alltoallv: blocks of different sizes and empty ones; bytes of the "
    "blocks for the other ranks",
    "[alltoall]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    const int r = world.Get_rank();
    // Rank s sends rank q (s + 2 q) % 4 elements: 0 to 3, and its own block too.
    auto count = [](int s, int q) { return (s + 2 * q) % 4; };
    std::vector<int> send_counts, recv_counts;
    std::vector<float> send, expected;
    for (int q = 0; q < kRanks; ++q) {
      send_counts.push_back(count(r, q));
      recv_counts.push_back(count(q, r));
      for (int i = 0; i < count(r, q); ++i) send.push_back(static_cast<float>(value_sent(r, q, i)));
      for (int i = 0; i < count(q, r); ++i)
        expected.push_back(static_cast<float>(value_sent(q, r, i)));
    }
    std::vector<float> recv(expected.size(), -1.0f);
    world.Alltoallv(send, send_counts, recv, recv_counts);
    check.that(recv == expected, "recv: the blocks of ranks 0, 1, 2 for this rank, in rank order");
    long long to_others = 0;
    for (int q = 0; q < kRanks; ++q) to_others += q == r ? 0 : 4 * count(r, q);
    check.equal("bytes after the Alltoallv: the blocks for the other ranks", to_others,
                world.total_bytes_transferred());
  });
}

TEST_CASE(
    "Communicator | Alltoallv: recv_counts that disagree with the senders throw "
    "std::invalid_argument on every rank, naming the pair",
    "[alltoall]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    const int r = world.Get_rank();
    // Everyone sends 2 elements to everyone; rank 1 expects 3 from rank 2 (a guessed count).
    std::vector<int> send_counts(kRanks, 2), recv_counts(kRanks, 2);
    if (r == 1) recv_counts[2] = 3;
    const xt::xtensor<double, 1> send = xt::zeros<double>({std::size_t(2 * kRanks)});
    xt::xtensor<double, 1> recv = xt::zeros<double>({std::size_t(2 * kRanks + (r == 1))});
    const std::string message =
        invalid_argument_of([&] { world.Alltoallv(send, send_counts, recv, recv_counts); });
    check.that(message ==
                   "Communicator::Alltoallv: rank 2 sends 2 elements to rank 1, but rank 1's "
                   "recv_counts[2] is 3: recv_counts must be what each rank sends this one "
                   "(exchange the counts first, e.g. with an Alltoall of one count per rank)",
               "unexpected error message: '" + message + "'");
    check.equal("bytes after the refused Alltoallv", 0, world.total_bytes_transferred());
  });
}

TEST_CASE(
    "Communicator | Alltoall and Alltoallv: sizes that do not add up throw "
    "std::invalid_argument naming them",
    "[alltoall]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    // Every rank makes the same mistake, so every rank throws before communicating.
    const xt::xtensor<float, 1> seven = xt::zeros<float>({7});
    xt::xtensor<float, 1> also_seven = xt::zeros<float>({7}), six = xt::zeros<float>({6});
    check.that(invalid_argument_of([&] { world.Alltoall(seven, also_seven); }) ==
                   "Communicator::Alltoall: send and recv must hold the same number of "
                   "elements, a multiple of Get_size() = 3, but send has 7 elements and recv "
                   "has 7 elements",
               "Alltoall of 7 elements on 3 ranks: expected std::invalid_argument");
    const std::vector<int> two_each(kRanks, 2), too_few(kRanks - 1, 2);
    check.that(invalid_argument_of([&] { world.Alltoallv(seven, two_each, six, two_each); }) ==
                   "Communicator::Alltoallv: send has 7 elements, but send_counts sum to 6",
               "Alltoallv of 7 elements with counts summing to 6: expected std::invalid_argument");
    check.that(invalid_argument_of([&] { world.Alltoallv(six, too_few, six, two_each); }) ==
                   "Communicator::Alltoallv: send_counts needs one count per rank (3), got 2",
               "Alltoallv with 2 counts on 3 ranks: expected std::invalid_argument");
  });
}
