// The similarity report of a batch (--similarity): for each student file, the pairs of hand-ins
// whose code is most alike, found by Dick Grune's similarity tester (sim_c++, Debian's
// similarity-tester), which compares token runs and so sees through renamed identifiers,
// reformatting and reordered functions.
//
// The starter's own code is everyone's: before the comparison, every line of a hand-in's file
// that also appears in the starter's file (whitespace aside) is dropped, so that the TODO
// comments, the includes and the provided instantiation block match nobody.
#pragma once

#include <string>
#include <vector>

#include "class/hand_ins.hpp"

namespace dtk::grade {

struct SimilarPair {
  std::string file;  // the student file, e.g. "model/func_impl.cpp"
  std::string a, b;  // students
  int percent = 0;   // the larger of "a consists for N % of b's material" and the converse
  // The side-by-side page, relative to the batch's output directory:
  // similarity/<file with / as _>/h<i>--h<j>.html, i and j the students' places in the batch.
  std::string view;
};

// Writes <out>/similarity/ (each hand-in's files without the starter's lines, named h<i>.cpp by
// the student's place in `hand_ins`, and one side-by-side page per pair listed) and returns, per
// student file, its `top` most similar pairs, most similar first. Throws std::runtime_error when
// sim_c++ is missing.
std::vector<SimilarPair> find_similar_pairs(const std::vector<HandIn>& hand_ins,
                                            const std::vector<std::string>& files,
                                            const std::string& starter_dir, const std::string& out,
                                            std::size_t top);

}  // namespace dtk::grade
