// Part 14: the GPT in five dimensions at once, its pipeline interleaved.
// Declared, with the exact contract of every function, in include/dtk/five_dimensional.hpp.
// In run_interleaved_schedule only pp_comm's Send, Recv, Sendrecv, Isend and Irecv may move data.
#include <dtk/dtk.hpp>

#include <algorithm>
#include <array>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace dtk {

// Helpers you write (argument checks, where a step's input comes from, ...) go in an anonymous
// namespace here, so that they stay private to this file:
// namespace {
// ...
// }  // namespace

// ----------------------------------- 14.1 -------------------------------------------------------

std::vector<ChunkStep> interleaved_schedule(int rank, int num_ranks, int num_chunks,
                                            int num_microbatches) {
  // TODO (Part 14.1): the header's three rules are the whole contract. Write the order of the
  // m · V forwards (and of the backwards) as a function of their index k first, and check it on
  // the header's example before you interleave. Traps: the backward order reverses the chunks,
  // not the micro-batches; the warm-up is capped by the number of forwards; check the arguments
  // first (std::invalid_argument naming the argument).
  throw NotImplemented("interleaved_schedule", "five_dimensional/five_dimensional.cpp");
}

// ----------------------------------- 14.2 -------------------------------------------------------

template <class T>
void run_interleaved_schedule(const std::vector<PipelineStage<T>*>& chunks,
                              const std::vector<ChunkStep>& schedule, Communicator& pp_comm) {
  // TODO (Part 14.2): Part 8.5's executor, chunk by chunk. Work out, for the model chunk
  // c = v · p + r, which rank holds the chunk before it and the chunk after it (the ranks are a
  // ring). Around a ring every rank can be inside a blocking Send at once: think about which
  // calls can block, and what makes a message unambiguous when two ranks exchange several kinds
  // at once (Communicator's Isend, Irecv and tags; communicator.hpp says what a Request needs
  // from you).
  throw NotImplemented("run_interleaved_schedule", "five_dimensional/five_dimensional.cpp");
}

// -------------------------------------------------------------------------------------------
// Provided: explicit instantiations for float and double. Do not edit below this line: the
// tests link against exactly these.
// -------------------------------------------------------------------------------------------
template void run_interleaved_schedule<float>(const std::vector<PipelineStage<float>*>&,
                                              const std::vector<ChunkStep>&, Communicator&);
template void run_interleaved_schedule<double>(const std::vector<PipelineStage<double>*>&,
                                               const std::vector<ChunkStep>&, Communicator&);

}  // namespace dtk
