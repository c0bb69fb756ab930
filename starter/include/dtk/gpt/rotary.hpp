// Rotary position embedding (Su et al., 2021), how a Llama knows positions: no table of position
// vectors, but each head's queries and keys turned by an angle that grows with the position.
//
// Column pairs (i, i + d/2) of each head, i < d/2 (the rotate-half layout of GPT-NeoX and
// Hugging Face's Llama), at a row of position p turn by p · θ^(-2i/d):
//
//   x'_i       = x_i · cos − x_{i+d/2} · sin
//   x'_{i+d/2} = x_{i+d/2} · cos + x_i · sin
//
// A query at position p and a key at position p' then score q'·k' = q · R(p' − p) · k: only
// their distance counts. The angle needs the ABSOLUTE position of each row, which is why the
// positions are passed in (under context parallelism a rank's rows are scattered chunks).
#pragma once

#include <vector>

#include "dtk/gpt/matmul.hpp"

namespace dtk::gpt {

// Turns every head of m (rows b · S + s at positions[s], heads · d columns, d even) in place;
// `inverse` turns back (by −angle: the transpose, which is also the backward of the turn).
template <class T>
void rotate(Matrix<T>& m, int heads, const std::vector<int>& positions, double theta,
            bool inverse = false);

}  // namespace dtk::gpt
