#include "launch.hpp"

#include <fcntl.h>
#include <mpi.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <stdexcept>

#include "student_thread.hpp"

namespace dtk::grade {

void make_private() {
  if (prctl(PR_SET_DUMPABLE, 0) != 0)
    throw std::runtime_error("cannot make the runner non-dumpable (prctl PR_SET_DUMPABLE)");
}

LaunchFile take_launch_file(const std::string& out_dir, int rank) {
  const std::string path = launch_file_path(out_dir, rank);
  std::string text;
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    char buffer[4096];
    for (ssize_t n; (n = read(fd, buffer, sizeof buffer)) > 0 && text.size() < (1 << 20);)
      text.append(buffer, static_cast<std::size_t>(n));
    close(fd);
    unlink(path.c_str());
  }
  MPI_Barrier(MPI_COMM_WORLD);
  LaunchFile file;
  if (fd < 0 || !LaunchFile::parse(text, file))
    throw std::runtime_error("cannot read the launch's file " + path);
  return file;
}

std::vector<std::string> load_student_code() {
  char self[4096] = {};
  const ssize_t length = readlink("/proc/self/exe", self, sizeof self - 1);
  const std::string exe(self, length > 0 ? static_cast<std::size_t>(length) : 0);
  const std::string library = exe.substr(0, exe.rfind('/') + 1) + "libdtk_student.so";
  const LoadState before = LoadState::now();
  if (const std::string problem = load_student_library(library); !problem.empty())
    throw std::runtime_error("cannot load the student library: " + problem);
  return left_by_loading(before);
}

}  // namespace dtk::grade
