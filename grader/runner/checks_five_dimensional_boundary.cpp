// Part 14.4 (assignment 4): the stage boundary under tensor parallelism. Two pipeline stages of
// tp ranks each (dp of them side by side, so that pp_comm and tp_comm are split from a larger
// world): one stage sends, the other receives, and each function is judged alone against the
// grader's own other half, so that a wrong 14.4 send costs the send only.
//   - send_to_stage: the student's call on the sending ranks; the receiving ranks, the grader's,
//     take every message that arrives (whatever its size or tag) until the grader's end marker,
//     and record each. The senders record the bytes they sent: exact, since sending the whole
//     tensor where a share was asked is the mistake the part is about.
//   - receive_from_stage: the grader's ranks send what the contract says; the student's call on
//     the receiving ranks returns the tensor, recorded.
// A call that throws leaves no rank waiting: every exchange ends with the grader's end marker,
// sent and taken whatever the call did. Without sequence parallelism the sending ranks hold one
// tensor alike: tp rank 0 draws it and the grader broadcasts it over the sending stage's tp
// ranks, so the receiving stage never holds it. With sequence parallelism every rank draws its
// own.
#include <mpi.h>

#include <algorithm>
#include <exception>

#include <xtensor/xadapt.hpp>
#include <xtensor/xmanipulation.hpp>

#include "check_context.hpp"
#include "keys.hpp"

namespace dtk::grade {

namespace {

// The grader's end marker: a tag the contract's 0 .. 32767 never uses.
constexpr int kEndTag = 32768;

struct Boundary {
  int tp, dp, rows, width;
  bool sequence_parallel, backward;
  int t, d, stage;  // this rank's tp rank, dp rank and stage (0 or 1)
  int sending_stage() const { return backward ? 1 : 0; }
  bool sends() const { return stage == sending_stage(); }
  int other_stage() const { return 1 - stage; }
  bool in_shares() const { return !sequence_parallel && rows % tp == 0; }
};

Boundary boundary_of(const CheckContext& context) {
  const TestCase& test = context.test;
  Boundary b;
  b.tp = static_cast<int>(test.value("tp", 2));
  b.dp = static_cast<int>(test.value("dp", 1));
  b.rows = static_cast<int>(test.value("rows", 6));
  b.width = static_cast<int>(test.value("width", 5));
  b.sequence_parallel = test.has_word("sp");
  b.backward = test.has_word("backward");
  if (test.p != 2 * b.tp * b.dp) {
    throw std::logic_error(test.id() + ": p must be 2 · tp · dp (two stages)");
  }
  const int r = context.rank();
  b.t = r % b.tp;
  b.d = r / b.tp % b.dp;
  b.stage = r / (b.tp * b.dp);
  return b;
}

std::string boundary_note(const Boundary& b, const std::string& type) {
  const std::size_t bytes = std::size_t(b.rows) * b.width * (type == "float" ? 4 : 8);
  return "two stages of tp = " + std::to_string(b.tp) + " ranks" +
         (b.dp > 1 ? " (" + std::to_string(b.dp) + " pipelines side by side)" : "") + ", stage " +
         std::to_string(b.sending_stage()) + " sending to stage " +
         std::to_string(1 - b.sending_stage()) + (b.backward ? " (a gradient going back)" : "") +
         ", " + type + ", a (" + std::to_string(b.rows) + ", " + std::to_string(b.width) +
         ") tensor of " + std::to_string(bytes) + " bytes on each sending rank, " +
         (b.sequence_parallel  ? "with sequence parallelism (each rank its own rows)"
          : b.rows % b.tp == 0 ? "without sequence parallelism (the tp ranks hold it alike)"
                               : "without sequence parallelism, tp not dividing the rows");
}

// The sending rank's tensor: its own (sequence parallelism) or tp rank 0's, broadcast.
template <class T>
xt::xtensor<T, 2> sent_tensor(CheckContext& context, const Boundary& b, Communicator& tp_comm) {
  xt::xtensor<T, 2> tensor = random_matrix<T>(context.rng("tensor"), b.rows, b.width);
  if (!b.sequence_parallel) {
    MPI_Bcast(tensor.data(), static_cast<int>(tensor.size()), detail::mpi_datatype<T>(), 0,
              tp_comm.handle());
  }
  return tensor;
}

// In the judgement: the tensor this rank's counterparts sent without sequence parallelism (tp
// rank 0's draw, as the broadcast made it).
template <class T>
xt::xtensor<T, 2> drawn_tensor(const Judgement& judgement, const Boundary& b) {
  const int sending_tp_rank0 = (b.sending_stage() * b.dp + b.d) * b.tp;
  return random_matrix<T>(judgement.rng_of(sending_tp_rank0, "tensor"), b.rows, b.width);
}

// What a sending rank of tp rank `t` is to send: its share, or the whole tensor.
template <class T>
std::vector<T> expected_message(const xt::xtensor<T, 2>& tensor, const Boundary& b, int t) {
  if (!b.in_shares()) return {tensor.begin(), tensor.end()};
  const std::size_t share = tensor.size() / b.tp;
  return {tensor.begin() + t * share, tensor.begin() + (t + 1) * share};
}

// A message's values: whole when small, else their count, a hash and the first few.
template <class T>
void record_values(CheckContext& context, const std::string& name, const std::vector<T>& values) {
  if (values.size() <= 256) {
    record_tensor(context.out, name, xt::xtensor<T, 1>(xt::adapt(values)));
    return;
  }
  const std::string bytes(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
  context.out.integer(name + ": elements", static_cast<long long>(values.size()));
  context.out.integer(name + ": a hash of every value",
                      static_cast<long long>(siphash(0, 0, bytes) >> 1));
  record_tensor(context.out, name + ": the first 8 values",
                xt::xtensor<T, 1>(xt::adapt(std::vector<T>(values.begin(), values.begin() + 8))));
}

// One case as this rank meets it: the layout, its communicators (pp_comm: this rank and its
// counterpart in the other stage, ordered by stage; tp_comm: its stage's tp ranks of this
// pipeline, ordered by tp rank; the grader's own, split before the call) and the calls' tag.
struct Exchange {
  Boundary b;
  Communicator pp_comm, tp_comm;
  int tag;
};

// The case's exchange, its note saying who sends and who receives (`roles`).
Exchange start_exchange(CheckContext& context, const std::string& roles) {
  const Boundary b = boundary_of(context);
  context.out.note(boundary_note(b, context.test.type) + "; " + roles);
  return {b, context.world.Split(b.d * b.tp + b.t, b.stage),
          context.world.Split(b.stage * b.dp + b.d, b.t),
          context.shared_rng("tag").uniform_int(0, 32767)};
}

// Receives whatever `source` sent on `comm` up to and with the end marker: what the call under
// test left unreceived (it threw first) is dropped.
void take_until_end_marker(int source, Communicator& comm) {
  for (;;) {
    MPI_Status status;
    MPI_Probe(source, MPI_ANY_TAG, comm.handle(), &status);
    int bytes = 0;
    MPI_Get_count(&status, MPI_BYTE, &bytes);
    std::vector<char> buffer(static_cast<std::size_t>(bytes));
    MPI_Recv(buffer.data(), bytes, MPI_BYTE, source, status.MPI_TAG, comm.handle(),
             MPI_STATUS_IGNORE);
    if (status.MPI_TAG == kEndTag) return;
  }
}

template <class T>
void send_case(CheckContext& context) {
  Exchange x = start_exchange(
      context, "the student's send_to_stage sends, the grader receives whatever arrives");
  const Boundary& b = x.b;
  if (b.sends()) {
    const xt::xtensor<T, 2> tensor = sent_tensor<T>(context, b, x.tp_comm);
    std::exception_ptr thrown;  // thrown again once the receiver has its end marker
    try {
      context.call([&] {
        send_to_stage<T>(tensor, b.sequence_parallel, b.other_stage(), x.tag, x.pp_comm, x.tp_comm);
      });
    } catch (...) {
      thrown = std::current_exception();
    }
    MPI_Send(nullptr, 0, MPI_BYTE, b.other_stage(), kEndTag, x.pp_comm.handle());
    if (thrown) std::rethrow_exception(thrown);
    context.out.part("the bytes it sends");
    context.out.integer("bytes send_to_stage sent", static_cast<long long>(context.bytes_sent()));
    return;
  }
  // The receiving rank: every message until the end marker, in the order they came.
  const std::string from =
      "from tp rank " + std::to_string(b.t) + " of stage " + std::to_string(b.other_stage());
  int messages = 0;
  for (;;) {
    MPI_Status status;
    MPI_Probe(b.other_stage(), MPI_ANY_TAG, x.pp_comm.handle(), &status);
    int bytes = 0;
    MPI_Get_count(&status, MPI_BYTE, &bytes);
    std::vector<char> buffer(static_cast<std::size_t>(bytes));
    MPI_Recv(buffer.data(), bytes, MPI_BYTE, b.other_stage(), status.MPI_TAG, x.pp_comm.handle(),
             MPI_STATUS_IGNORE);
    if (status.MPI_TAG == kEndTag) break;
    const std::string name = "message " + std::to_string(++messages) + " " + from;
    context.out.integer(name + ": its tag (the call's was " + std::to_string(x.tag) + ")",
                        status.MPI_TAG);
    std::vector<T> values(buffer.size() / sizeof(T));
    std::copy_n(buffer.data(), values.size() * sizeof(T), reinterpret_cast<char*>(values.data()));
    record_values(context, name + ": values", values);
    context.judge([&](Judgement& judgement) {
      if (!b.in_shares() || b.rows * b.width > 256) return;
      const xt::xtensor<T, 2> tensor = drawn_tensor<T>(judgement, b);
      judgement.mistake(name + ": values", "the whole tensor (every tp rank sends all of it)",
                        xt::xtensor<T, 1>(xt::flatten(tensor)));
      judgement.mistake(name + ": values", "the share of tp rank tp - 1 - i",
                        xt::xtensor<T, 1>(xt::adapt(expected_message(tensor, b, b.tp - 1 - b.t))));
    });
  }
  context.out.integer("messages " + from, messages);
}

template <class T>
void receive_case(CheckContext& context) {
  Exchange x = start_exchange(
      context, "the grader sends as the contract says, the student's receive_from_stage receives");
  const Boundary& b = x.b;
  if (b.sends()) {
    const xt::xtensor<T, 2> tensor = sent_tensor<T>(context, b, x.tp_comm);
    const std::vector<T> message = expected_message(tensor, b, b.t);
    // The message, then an end marker behind it (MPI keeps their order): a receiver whose call
    // threw before taking the message takes it then, so that this send completes.
    MPI_Request sending;
    MPI_Isend(message.data(), static_cast<int>(message.size()), detail::mpi_datatype<T>(),
              b.other_stage(), x.tag, x.pp_comm.handle(), &sending);
    MPI_Send(nullptr, 0, MPI_BYTE, b.other_stage(), kEndTag, x.pp_comm.handle());
    MPI_Wait(&sending, MPI_STATUS_IGNORE);
    return;
  }
  const std::array<std::size_t, 2> shape = {std::size_t(b.rows), std::size_t(b.width)};
  std::exception_ptr thrown;
  xt::xtensor<T, 2> received;
  try {
    received = context.call([&] {
      return receive_from_stage<T>(shape, b.sequence_parallel, b.other_stage(), x.tag, x.pp_comm,
                                   x.tp_comm);
    });
  } catch (...) {
    thrown = std::current_exception();
  }
  take_until_end_marker(b.other_stage(), x.pp_comm);
  if (thrown) std::rethrow_exception(thrown);
  const std::string name =
      "what tp rank " + std::to_string(b.t) + " of stage " + std::to_string(b.stage) + " returned";
  record_values(context, name, std::vector<T>(received.begin(), received.end()));
  context.judge([&](Judgement& judgement) {
    if (!b.in_shares() || b.rows * b.width > 256) return;
    const xt::xtensor<T, 2> tensor = drawn_tensor<T>(judgement, b);
    std::vector<T> reversed, own_share(tensor.size(), T(0));
    for (int t = b.tp - 1; t >= 0; --t) {
      const std::vector<T> share = expected_message(tensor, b, t);
      reversed.insert(reversed.end(), share.begin(), share.end());
    }
    const std::vector<T> mine = expected_message(tensor, b, b.t);
    std::copy(mine.begin(), mine.end(), own_share.begin() + b.t * mine.size());
    judgement.mistake(name, "the shares in reverse tp order",
                      xt::xtensor<T, 1>(xt::adapt(reversed)));
    judgement.mistake(name, "its own share alone, the other rows left 0 (no gather)",
                      xt::xtensor<T, 1>(xt::adapt(own_share)));
  });
}

void check_send_to_stage(CheckContext& context) {
  run_typed(context, send_case<float>, send_case<double>);
}

void check_receive_from_stage(CheckContext& context) {
  run_typed(context, receive_case<float>, receive_case<double>);
}

}  // namespace

DTK_GRADE_CHECK(check_send_to_stage,
                {"send_to_stage",
                 CaseKind::fields,
                 /*collective=*/true,
                 /*typed=*/true,
                 {"the bytes it sends"},
                 /*reduces=*/false,
                 /*timed_against=*/"",
                 /*case_words=*/{"tp", "dp", "rows", "width", "sp", "backward"}});
DTK_GRADE_CHECK(check_receive_from_stage,
                {"receive_from_stage",
                 CaseKind::fields,
                 /*collective=*/true,
                 /*typed=*/true,
                 {},
                 /*reduces=*/false,
                 /*timed_against=*/"",
                 /*case_words=*/{"tp", "dp", "rows", "width", "sp", "backward"}});

}  // namespace dtk::grade
