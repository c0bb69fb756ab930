#include "dtk/training/progress_line.hpp"

#include <cstdio>

namespace dtk {

std::string progress_bar(long step, long steps) {
  constexpr int kWidth = 20;
  const int filled = static_cast<int>(kWidth * step / steps);
  char percent[8];
  std::snprintf(percent, sizeof percent, "%3d%%", static_cast<int>(100 * step / steps));
  return "[" + std::string(filled, '#') + std::string(kWidth - filled, '-') + "] " + percent;
}

std::string progress_line(int epoch, int epochs, long step, long steps, const BatchStats& recent,
                          float lr, double images_per_second) {
  char line[200];
  std::snprintf(line, sizeof line,
                "epoch %d/%d %s  step %4ld/%ld  loss %.4f  acc %.4f  lr %.4f  %.1fk img/s", epoch,
                epochs, progress_bar(step, steps).c_str(), step, steps, recent.mean_loss(),
                recent.accuracy(), lr, images_per_second / 1000);
  return line;
}

}  // namespace dtk
