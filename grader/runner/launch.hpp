// How a rank of the runner starts, so that no student code ever runs before what it must not
// see is gone: the process is made non-dumpable (its memory, descriptors and environment
// unreadable by the other processes of its user: the other ranks), MPI starts, each rank reads
// its launch file (launch_file.hpp) and deletes it, and only once every rank has done so is the
// student library loaded, on a sealed thread (student_thread.hpp). The runner itself links no
// student code: the student library's functions are bound when first called.
#pragma once

#include <string>
#include <vector>

#include "launch_file.hpp"

namespace dtk::grade {

// Called first in main: no core dumps, no reading of this process by others of its user.
void make_private();

// This rank's launch file, read and deleted; then waits until every rank has done so. Throws
// std::runtime_error when it cannot be read.
LaunchFile take_launch_file(const std::string& out_dir, int rank);

// Loads libdtk_student.so from beside the runner's executable. Returns what its static
// initializers left behind (student_thread.hpp), or throws std::runtime_error when it cannot
// be loaded.
std::vector<std::string> load_student_code();

}  // namespace dtk::grade
