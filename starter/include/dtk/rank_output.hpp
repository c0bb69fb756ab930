// Printing from many ranks in a readable order.
//
// Lines that several ranks write to stdout at once interleave unpredictably under mpirun, even
// with barriers in between. These helpers instead send every rank's text to rank 0, which
// prints it (or returns it) in rank order.
#pragma once

#include <string>
#include <vector>

#include "dtk/communicator.hpp"

namespace dtk {

// Collective: returns, on rank 0, the `text` of every rank indexed by rank; other ranks get an
// empty vector.
std::vector<std::string> gather_text(const Communicator& comm, const std::string& text);

// Collective: rank 0 prints "rank r: <text of rank r>" for every rank, in rank order.
void print_in_rank_order(const Communicator& comm, const std::string& text);

}  // namespace dtk
