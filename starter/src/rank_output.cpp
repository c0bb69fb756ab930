#include "dtk/rank_output.hpp"

#include <iostream>
#include <numeric>

namespace dtk {

std::vector<std::string> gather_text(const Communicator& comm, const std::string& text) {
  const int size = comm.Get_size();
  const bool root = comm.Get_rank() == 0;
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(root ? size : 0);
  MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, comm.handle());

  std::vector<int> offsets(lengths.size(), 0);
  if (root) std::partial_sum(lengths.begin(), lengths.end() - 1, offsets.begin() + 1);
  std::string all(root ? offsets.back() + lengths.back() : 0, '\0');
  MPI_Gatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR,
              0, comm.handle());

  std::vector<std::string> texts;
  for (std::size_t r = 0; r < lengths.size(); ++r)
    texts.push_back(all.substr(offsets[r], lengths[r]));
  return texts;
}

void print_in_rank_order(const Communicator& comm, const std::string& text) {
  const std::vector<std::string> texts = gather_text(comm, text);
  for (std::size_t r = 0; r < texts.size(); ++r)
    std::cout << "rank " << r << ": " << texts[r] << "\n";
  std::cout << std::flush;
}

}  // namespace dtk
