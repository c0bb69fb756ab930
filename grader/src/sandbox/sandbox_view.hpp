// What a sandboxed command may see of the file system. Where the kernel gives it a private mount
// namespace (root with CAP_SYS_ADMIN), every directory it has no business reading is covered with
// an empty one: the kit's own trees, every other checkout of the kit, home directories, a class's
// hand-ins and results. It keeps the system's directories (/usr, /etc, /tmp, ...) and the way to
// what the grading needs (its scratch directory, the compiler's installation).
#pragma once

#include <set>
#include <string>
#include <vector>

namespace dtk::grade {

// The top-level directories a command may need: programs, libraries, devices, configuration,
// temporary files. Every other entry of "/" is hidden unless a needed path lies below it.
const std::set<std::string>& system_directories();

// The directories to cover, from `root` down: every directory that is neither one of `system`
// (names of entries of `root`) nor on the way to one of `needed` (an ancestor of it or itself),
// searched only below the ancestors of the needed paths (so the entries of a system directory
// stay visible); then each of `private_paths` not already covered and not on the way to a needed
// path (such a one cannot be hidden: grading must then refuse if the sandbox can read it).
// Paths are made absolute and their links resolved first; only directories are listed (a file
// cannot be covered by a directory).
std::vector<std::string> paths_to_hide(const std::vector<std::string>& needed,
                                       const std::vector<std::string>& private_paths,
                                       const std::string& root = "/",
                                       const std::set<std::string>& system = system_directories());

}  // namespace dtk::grade
