#include "dtk/gpt/parallel.hpp"

#include <algorithm>
#include <condition_variable>
#include <mutex>
#include <thread>
#include <vector>

// OpenBLAS's own functions, declared weak: with another BLAS they are simply absent (null), and
// the loops run on the calling thread alone.
extern "C" void openblas_set_num_threads(int threads) __attribute__((weak));
extern "C" int openblas_get_num_threads() __attribute__((weak));

namespace dtk::gpt {

namespace {

using Body = std::function<void(std::size_t, std::size_t)>;

// Range `part` of `parts` over [0, n).
void run_part(const Body& body, std::size_t n, std::size_t part, std::size_t parts) {
  body(n * part / parts, n * (part + 1) / parts);
}

// Worker threads, started when first needed, asleep between loops. Worker w runs part w + 1 of
// each loop; the caller runs part 0.
class Pool {
 public:
  ~Pool() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    for (std::thread& worker : workers_) worker.join();
  }

  void run(std::size_t n, const Body& body, std::size_t parts) {
    while (workers_.size() + 1 < parts) {
      workers_.emplace_back([this, part = workers_.size() + 1] { work(part); });
    }
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      body_ = &body;
      n_ = n;
      parts_ = parts;
      unfinished_ = parts - 1;
      ++loop_;
    }
    wake_.notify_all();
    run_part(body, n, 0, parts);
    std::unique_lock<std::mutex> lock(mutex_);
    finished_.wait(lock, [this] { return unfinished_ == 0; });
  }

 private:
  void work(std::size_t part) {
    long done = 0;  // the loops this worker has seen
    std::unique_lock<std::mutex> lock(mutex_);
    while (true) {
      wake_.wait(lock, [&] { return stop_ || loop_ != done; });
      if (stop_) return;
      done = loop_;
      if (part >= parts_) continue;  // this loop needs fewer threads
      const Body& body = *body_;
      const std::size_t n = n_, parts = parts_;
      lock.unlock();
      run_part(body, n, part, parts);
      lock.lock();
      if (--unfinished_ == 0) finished_.notify_one();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  std::vector<std::thread> workers_;
  const Body* body_ = nullptr;
  std::size_t n_ = 0, parts_ = 0, unfinished_ = 0;
  long loop_ = 0;
  bool stop_ = false;
};

}  // namespace

void parallel_for(std::size_t n, const Body& body, bool serial_blas) {
  const int blas_threads = openblas_get_num_threads ? openblas_get_num_threads() : 1;
  const std::size_t parts = std::min(n, std::size_t(std::max(blas_threads, 1)));
  if (serial_blas && openblas_set_num_threads) openblas_set_num_threads(1);
  if (parts <= 1) {
    body(0, n);
  } else {
    static Pool pool;
    pool.run(n, body, parts);
  }
  if (serial_blas && openblas_set_num_threads) openblas_set_num_threads(blas_threads);
}

}  // namespace dtk::gpt
