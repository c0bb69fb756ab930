// The precompiled header of student compiles: the heavy third-party headers the student files
// include through dtk.hpp (MPI, xtensor) or directly (nlohmann/json). No dtk header here: the
// sandbox compiles against its own copy of those, and #pragma once would not match the copy.
#include <mpi.h>

#include <nlohmann/json.hpp>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xtensor.hpp>
#include <xtensor/xview.hpp>
