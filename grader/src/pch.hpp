// The precompiled header of student compiles: the heavy third-party headers the student files
// include through dtk.hpp (MPI, xtensor). No dtk header here: the sandbox compiles against its
// own copy of those, and #pragma once would not match the copy. Not nlohmann/json, though one
// student file (Part 4's) includes it: with it the header takes longer to load than it saves
// (measured with GCC 12: Part 9's zero.cpp 4.3 s with it, 1.1 s without, 2.7 s with no
// precompiled header at all; Part 4's file itself 3.6 s with it, 2.7 s without).
#include <mpi.h>

#include <xtensor/xmanipulation.hpp>
#include <xtensor/xtensor.hpp>
#include <xtensor/xview.hpp>
