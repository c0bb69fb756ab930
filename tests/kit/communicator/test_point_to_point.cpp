// Kit self-test of the Communicator's point-to-point calls (assignments 2 and 4), on 2 ranks:
// Send, Recv and Sendrecv in container and pointer forms, Isend and Irecv, deliver the values,
// add exactly the bytes they send to total_bytes_transferred() (Recv and Irecv add none), and a
// receive buffer longer than the message throws std::runtime_error naming both lengths.
#include "dtk_test.hpp"

#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

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

TEST_CASE("Communicator | Isend and Irecv: 1 MB each way, both ranks send first", "[p2p]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    const int r = world.Get_rank(), other = 1 - r;
    // Blocking Sends in this order would wait for each other forever past the eager limit.
    const std::size_t n = (1 << 20) / 8;
    xt::xtensor<double, 1> mine = xt::full_like(xt::xtensor<double, 1>::from_shape({n}), r + 0.5);
    xt::xtensor<double, 1> theirs = xt::zeros<double>({n});
    xt::xtensor<double, 1> tagged = xt::zeros<double>({2});
    const xt::xtensor<double, 1> small = {10.0 * r, 10.0 * r + 1};
    dtk::Request sending = world.Isend(mine, other, /*tag=*/1);
    dtk::Request sending_small = world.Isend(small, other, /*tag=*/2);
    check.equal("bytes once both Isends are posted", n * 8 + 2 * 8,
                world.total_bytes_transferred());
    // Received in the other order: tags tell the messages apart.
    dtk::Request receiving_small = world.Irecv(tagged, other, /*tag=*/2);
    dtk::Request receiving = world.Irecv(theirs, other, /*tag=*/1);
    check.that(!receiving.complete(), "an Irecv is in flight until Wait or Test completes it");
    while (!receiving.Test()) {
    }
    check.that(receiving.complete() && receiving.Test(), "Test stays true once it returned true");
    std::vector<dtk::Request> rest;
    rest.push_back(std::move(sending));
    rest.push_back(std::move(sending_small));
    rest.push_back(std::move(receiving_small));
    for (dtk::Request& request : rest) request.Wait();
    check.that(theirs(0) == other + 0.5 && theirs(n - 1) == other + 0.5,
               "Irecv: expected the other rank's 1 MB");
    check.close("Irecv (tag 2)", xt::xtensor<double, 1>{10.0 * other, 10.0 * other + 1}, tagged);
    check.equal("bytes after the waits (Irecv adds none)", n * 8 + 2 * 8,
                world.total_bytes_transferred());
    check.that(dtk::Request().complete(), "a default Request is complete");
  });
}

TEST_CASE("Communicator | a Request destroyed in flight is waited for", "[p2p]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    const int r = world.Get_rank(), other = 1 - r;
    const std::size_t n = (1 << 20) / 4;
    xt::xtensor<float, 1> mine = xt::full_like(xt::xtensor<float, 1>::from_shape({n}), r + 1.0f);
    xt::xtensor<float, 1> theirs = xt::zeros<float>({n});
    {
      dtk::Request receiving = world.Irecv(theirs, other);
      dtk::Request sending = world.Isend(mine, other);
    }  // both destroyed here, unfinished: each waits
    check.that(theirs(0) == other + 1.0f && theirs(n - 1) == other + 1.0f,
               "the destroyed Irecv's buffer holds the message");
  });
}

TEST_CASE("Communicator | Irecv of a shorter message throws on Wait, naming both lengths",
          "[p2p]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    xt::xtensor<float, 1> two = {1, 2};
    xt::xtensor<float, 1> five = xt::zeros<float>({5});
    if (world.Get_rank() == 0) {
      world.Send(two, 1);
    } else {
      std::string message;
      dtk::Request receiving = world.Irecv(five, 0);
      try {
        receiving.Wait();
      } catch (const std::runtime_error& e) {
        message = e.what();
      }
      check.that(message ==
                     "Communicator::Irecv: expected a message of 5 elements from rank 0, "
                     "but it sent 2 elements",
                 "unexpected error message: '" + message + "'");
    }
  });
}

TEST_CASE("Communicator | the observer sees Isend and Irecv posted, and each Wait", "[p2p]") {
  dtk::testing::on_every_rank(kRanks, [](dtk::testing::Checks& check) {
    dtk::Communicator world;
    const int r = world.Get_rank(), other = 1 - r;
    std::vector<std::string> seen;
    std::vector<int> peers;
    dtk::set_communication_observer([&](const dtk::CommunicationCall& call) {
      seen.emplace_back(call.call);
      peers.push_back(call.peer);
    });
    xt::xtensor<int, 1> mine = {r}, theirs = {-1};
    dtk::Request receiving = world.Irecv(theirs, other);
    dtk::Request sending = world.Isend(mine, other);
    sending.Wait();
    receiving.Wait();
    receiving.Wait();  // already complete: not reported again
    dtk::set_communication_observer(nullptr);
    check.that(seen == std::vector<std::string>{"Irecv", "Isend", "Wait", "Wait"},
               "expected Irecv, Isend, Wait, Wait to be observed");
    check.that(peers == std::vector<int>{other, other, other, other},
               "every observed call names the other rank");
  });
}
