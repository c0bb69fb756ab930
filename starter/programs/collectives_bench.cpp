// Part 7: your collectives against MPI's, measured the way NVIDIA's nccl-tests measures them.
//
//   mpirun -n 2 ./collectives_bench [--collective allreduce|allgather|reduce_scatter|alltoall|all]
//       [--min-bytes B] [--max-bytes B] [--type float|double|int32] [--op sum|min|max]
//       [--iters N] [--csv FILE] [--svg FILE] [--impl mine|mpi|both]
//
// One row per size, from --min-bytes to --max-bytes doubling (default 8 B to 64 MB; sizes take
// K, M, G suffixes, powers of 1024). Columns, as in nccl-tests:
//   size     S, the bytes of the whole buffer: allreduce's src; allgather's dst (p blocks);
//            reduce_scatter's src (p blocks); alltoall's src. Rounded down to whole elements
//            (and to p equal blocks where the collective needs them).
//   count    S in elements
//   time     median over --iters timed calls (after 5 warm-up calls) of the slowest rank's time
//   algbw    S / time, in GB/s (1e9 bytes per second)
//   busbw    algbw * factor: 2(p-1)/p for allreduce, (p-1)/p for the others. A ring moves that
//            share of S in and out of every rank, so busbw compares with a link's bandwidth
//            whatever p is.
//   #wrong   elements of the result (all ranks together) that differ from the expected value
// Exit status: 0, or 1 if any result was wrong or a collective threw, 2 for bad usage.
#include <dtk/freed_memory.hpp>
#include <dtk/my_collectives.hpp>
#include <dtk/single_machine_mpi.hpp>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "statistics.hpp"

namespace {

using dtk::statistics::median;

constexpr int kWarmupIters = 5;
const std::vector<std::string> kCollectives = {"allreduce", "allgather", "reduce_scatter",
                                               "alltoall"};

struct Options {
  std::vector<std::string> collectives = kCollectives;
  std::size_t min_bytes = 8;
  std::size_t max_bytes = std::size_t{64} << 20;
  std::string type = "float";
  std::string op = "sum";
  int iters = 20;
  std::string csv, svg;
  std::vector<std::string> impls = {"mine", "mpi"};
};

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

constexpr const char* kUsage =
    "usage: mpirun -n P collectives_bench [--collective allreduce|allgather|reduce_scatter|"
    "alltoall|all]\n"
    "         [--min-bytes B] [--max-bytes B] [--type float|double|int32] [--op sum|min|max]\n"
    "         [--iters N] [--csv FILE] [--svg FILE] [--impl mine|mpi|both]\n"
    "Sizes take K, M, G suffixes (powers of 1024): --max-bytes 64M.\n";

// "4096", "64K", "64M", "1G" -> bytes.
std::size_t parse_bytes(const std::string& flag, const std::string& text) {
  std::size_t end = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &end);
  } catch (const std::exception&) {
    end = 0;
  }
  const std::string suffix = end ? text.substr(end) : "";
  const std::map<std::string, int> shifts = {{"", 0}, {"K", 10}, {"M", 20}, {"G", 30}};
  if (end == 0 || text[0] == '-' || shifts.count(suffix) == 0 || value == 0 ||
      value > (1ull << 30) >> shifts.at(suffix)) {
    throw UsageError(flag + " takes a size from 1 to 1G bytes (e.g. 8, 64K, 64M), not '" + text +
                     "'");
  }
  return static_cast<std::size_t>(value << shifts.at(suffix));
}

std::string choice(const std::string& flag, const std::string& text,
                   const std::vector<std::string>& allowed) {
  if (std::find(allowed.begin(), allowed.end(), text) != allowed.end()) return text;
  std::string list;
  for (const auto& a : allowed) list += (list.empty() ? "" : "|") + a;
  throw UsageError(flag + " takes " + list + ", not '" + text + "'");
}

Options parse(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--help" || flag == "-h") throw UsageError("");  // usage on stdout, exit 0
    if (flag.rfind("--", 0) != 0) throw UsageError("unexpected argument '" + flag + "'");
    if (i + 1 >= argc) throw UsageError(flag + " needs a value");
    const std::string value = argv[++i];
    if (flag == "--collective") {
      std::vector<std::string> all = kCollectives;
      all.push_back("all");
      const std::string c = choice(flag, value, all);
      o.collectives = c == "all" ? kCollectives : std::vector<std::string>{c};
    } else if (flag == "--min-bytes") {
      o.min_bytes = parse_bytes(flag, value);
    } else if (flag == "--max-bytes") {
      o.max_bytes = parse_bytes(flag, value);
    } else if (flag == "--type") {
      o.type = choice(flag, value, {"float", "double", "int32"});
    } else if (flag == "--op") {
      o.op = choice(flag, value, {"sum", "min", "max"});
    } else if (flag == "--iters") {
      char* end = nullptr;
      const long n = std::strtol(value.c_str(), &end, 10);
      if (*end != '\0' || n < 1 || n > 100000)
        throw UsageError("--iters takes a whole number from 1 to 100000, not '" + value + "'");
      o.iters = static_cast<int>(n);
    } else if (flag == "--csv") {
      o.csv = value;
    } else if (flag == "--svg") {
      o.svg = value;
    } else if (flag == "--impl") {
      const std::string impl = choice(flag, value, {"mine", "mpi", "both"});
      o.impls =
          impl == "both" ? std::vector<std::string>{"mine", "mpi"} : std::vector<std::string>{impl};
    } else {
      throw UsageError("unknown flag '" + flag + "'");
    }
  }
  if (o.min_bytes > o.max_bytes) {
    throw UsageError("--min-bytes (" + std::to_string(o.min_bytes) +
                     ") is larger than --max-bytes (" + std::to_string(o.max_bytes) + ")");
  }
  return o;
}

// One measured (collective, size, implementation).
struct Row {
  std::string collective, impl;
  std::size_t bytes, count;
  double time_us, algbw, busbw;
  long long wrong;
};

double bus_factor(const std::string& collective, int p) {
  const double share = static_cast<double>(p - 1) / p;
  return collective == "allreduce" ? 2 * share : share;
}

MPI_Op mpi_op(const std::string& op) {
  return op == "sum" ? MPI_SUM : op == "min" ? MPI_MIN : MPI_MAX;
}

// Rank r's input element i: small integers, so that float sums over any rank count are exact
// and a block in the wrong place changes the value.
template <class T>
T input_value(int r, std::size_t i) {
  return static_cast<T>(static_cast<long long>((i * 7 + r * 13) % 31) - 15);
}

template <class T>
T reduce_inputs(std::size_t i, int p, const std::string& op) {
  T acc = input_value<T>(0, i);
  for (int r = 1; r < p; ++r) {
    const T v = input_value<T>(r, i);
    acc = op == "sum" ? acc + v : op == "min" ? std::min(acc, v) : std::max(acc, v);
  }
  return acc;
}

// One collective at one size: its buffers, the call for each implementation, and the check.
// The calls refer to the buffers: a Case stays where it was made.
template <class T>
struct Case {
  Case() = default;
  Case(const Case&) = delete;
  xt::xtensor<T, 1> src, dst;
  std::function<void()> mine, mpi;
  std::function<T(std::size_t)> expected;  // dst element i on this rank
};

template <class T>
void prepare(Case<T>& c, const std::string& collective, std::size_t total, const std::string& op,
             dtk::Communicator& comm) {
  const int p = comm.Get_size();
  const int r = comm.Get_rank();
  const std::size_t k = total / p;  // block of the collectives that need p blocks
  const MPI_Op mop = mpi_op(op);
  const MPI_Datatype type = dtk::detail::mpi_datatype<T>();
  const MPI_Comm h = comm.handle();
  auto fill = [&](std::size_t n) {
    c.src = xt::xtensor<T, 1>::from_shape({n});
    for (std::size_t i = 0; i < n; ++i) c.src(i) = input_value<T>(r, i);
  };
  if (collective == "allreduce") {
    fill(total);
    c.dst = xt::xtensor<T, 1>::from_shape({total});
    c.mine = [&c, mop, &comm] { dtk::my_allreduce(c.src, c.dst, mop, comm); };
    c.mpi = [&c, mop, type, h] {
      MPI_Allreduce(c.src.data(), c.dst.data(), c.src.size(), type, mop, h);
    };
    c.expected = [p, op](std::size_t i) { return reduce_inputs<T>(i, p, op); };
  } else if (collective == "allgather") {
    fill(k);
    c.dst = xt::xtensor<T, 1>::from_shape({k * p});
    c.mine = [&c, &comm] { dtk::my_allgather(c.src, c.dst, comm); };
    c.mpi = [&c, type, h] {
      MPI_Allgather(c.src.data(), c.src.size(), type, c.dst.data(), c.src.size(), type, h);
    };
    c.expected = [k](std::size_t i) { return input_value<T>(i / k, i % k); };
  } else if (collective == "reduce_scatter") {
    fill(k * p);
    c.dst = xt::xtensor<T, 1>::from_shape({k});
    c.mine = [&c, mop, &comm] { dtk::my_reduce_scatter(c.src, c.dst, mop, comm); };
    c.mpi = [&c, mop, type, h] {
      MPI_Reduce_scatter_block(c.src.data(), c.dst.data(), c.dst.size(), type, mop, h);
    };
    c.expected = [p, k, r, op](std::size_t i) { return reduce_inputs<T>(r * k + i, p, op); };
  } else {  // alltoall: block b of rank q's src lands in block q of rank b's dst
    fill(k * p);
    c.dst = xt::xtensor<T, 1>::from_shape({k * p});
    c.mine = [&c, &comm] { dtk::my_alltoall(c.src, c.dst, comm); };
    c.mpi = [&c, k, type, h] { MPI_Alltoall(c.src.data(), k, type, c.dst.data(), k, type, h); };
    c.expected = [k, r](std::size_t i) { return input_value<T>(i / k, r * k + i % k); };
  }
}

// The buffer's element count for a size in bytes: whole elements, p equal blocks if needed.
std::size_t element_count(const std::string& collective, std::size_t bytes, std::size_t elem,
                          int p) {
  const std::size_t n = bytes / elem;
  return collective == "allreduce" ? n : n / p * p;
}

// Seconds one call takes, on the slowest rank (every rank gets the same answer).
double timed(const std::function<void()>& call, MPI_Comm comm) {
  MPI_Barrier(comm);
  const double start = MPI_Wtime();
  call();
  double seconds = MPI_Wtime() - start;
  MPI_Allreduce(MPI_IN_PLACE, &seconds, 1, MPI_DOUBLE, MPI_MAX, comm);
  return seconds;
}

template <class T>
std::vector<Row> measure(const std::string& collective, std::size_t count, const Options& o,
                         dtk::Communicator& comm) {
  Case<T> c;
  prepare(c, collective, count, o.op, comm);
  std::map<std::string, std::function<void()>> calls = {{"mine", c.mine}, {"mpi", c.mpi}};
  std::map<std::string, long long> wrong;
  for (const auto& impl : o.impls) {
    c.dst.fill(static_cast<T>(-99));  // a value no correct result holds
    calls[impl]();
    long long bad = 0;
    for (std::size_t i = 0; i < c.dst.size(); ++i) bad += c.dst(i) != c.expected(i);
    MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_LONG_LONG, MPI_SUM, comm.handle());
    wrong[impl] = bad;
  }
  // Warm-up, then the implementations interleaved call by call, so that both see the same
  // machine (other processes, CPU frequency) over the run.
  std::map<std::string, std::vector<double>> seconds;
  for (int it = 0; it < kWarmupIters + o.iters; ++it) {
    for (const auto& impl : o.impls) {
      const double s = timed(calls[impl], comm.handle());
      if (it >= kWarmupIters) seconds[impl].push_back(s);
    }
  }
  const std::size_t bytes = count * sizeof(T);
  std::vector<Row> rows;
  for (const auto& impl : o.impls) {
    const double t = median(seconds[impl]);
    const double algbw = t > 0 ? bytes / t / 1e9 : 0;
    rows.push_back({collective, impl, bytes, count, t * 1e6, algbw,
                    algbw * bus_factor(collective, comm.Get_size()), wrong[impl]});
  }
  return rows;
}

void print_header(const std::string& collective, const Options& o) {
  std::printf("#\n# %s\n#%39s", collective.c_str(), "");
  for (const auto& impl : o.impls) std::printf("  %-33s", impl.c_str());
  std::printf("\n# %10s %12s %7s %6s", "size", "count", "type", "redop");
  for (std::size_t i = 0; i < o.impls.size(); ++i)
    std::printf("  %10s %7s %7s %6s", "time", "algbw", "busbw", "#wrong");
  std::printf("\n# %10s %12s %7s %6s", "(B)", "(elements)", "", "");
  for (std::size_t i = 0; i < o.impls.size(); ++i)
    std::printf("  %10s %7s %7s %6s", "(us)", "(GB/s)", "(GB/s)", "");
  std::printf("\n");
}

void print_rows(const std::vector<Row>& rows, const Options& o) {
  const std::string op =
      rows[0].collective == "allgather" || rows[0].collective == "alltoall" ? "none" : o.op;
  std::printf("  %10zu %12zu %7s %6s", rows[0].bytes, rows[0].count, o.type.c_str(), op.c_str());
  for (const Row& row : rows)
    std::printf("  %10.1f %7.2f %7.2f %6lld", row.time_us, row.algbw, row.busbw, row.wrong);
  std::printf("\n");
  std::fflush(stdout);
}

void write_csv(std::ostream& out, const std::vector<Row>& rows, const Options& o, int p) {
  out << "collective,impl,ranks,type,op,bytes,count,time_us,algbw_gbps,busbw_gbps,wrong\n";
  for (const Row& r : rows) {
    out << r.collective << ',' << r.impl << ',' << p << ',' << o.type << ',' << o.op << ','
        << r.bytes << ',' << r.count << ',' << r.time_us << ',' << r.algbw << ',' << r.busbw << ','
        << r.wrong << '\n';
  }
}

// Bus bandwidth against size: one line per (collective, implementation), log2-scale x axis.
void write_svg(std::ostream& out, const std::vector<Row>& rows, const Options& o, int p) {
  const double W = 720, H = 440, left = 70, right = 190, top = 40, bottom = 60;
  const double plot_w = W - left - right, plot_h = H - top - bottom;
  double xmin = 1e300, xmax = 0, ymax = 0;
  for (const Row& r : rows) {
    xmin = std::min(xmin, std::log2(r.bytes));
    xmax = std::max(xmax, std::log2(r.bytes));
    ymax = std::max(ymax, r.busbw);
  }
  if (xmax <= xmin) xmax = xmin + 1;
  // A round grid step (1, 2 or 5 times a power of ten): three to six grid lines.
  const double raw = ymax > 0 ? ymax / 6 : 0.25;
  const double magnitude = std::pow(10, std::floor(std::log10(raw)));
  const double ystep = magnitude * (raw <= magnitude       ? 1
                                    : raw <= 2 * magnitude ? 2
                                    : raw <= 5 * magnitude ? 5
                                                           : 10);
  const double ytop = std::max(ystep, std::ceil(ymax / ystep) * ystep);
  auto x = [&](double bytes) { return left + (std::log2(bytes) - xmin) / (xmax - xmin) * plot_w; };
  auto y = [&](double gbps) { return top + plot_h - gbps / ytop * plot_h; };
  auto size_label = [](double log2_bytes) {
    const int b = static_cast<int>(log2_bytes);
    const char* unit[] = {"B", "KB", "MB", "GB"};
    return std::to_string(1 << (b % 10)) + " " + unit[b / 10];
  };
  out << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << W << "\" height=\"" << H
      << "\" viewBox=\"0 0 " << W << ' ' << H << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<title>Bus bandwidth against message size, " << p << " ranks, " << o.type << ", " << o.op
      << ": your collectives (solid) and MPI's (dashed)</title>\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << left + plot_w / 2 << "\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">"
      << "Bus bandwidth, " << p << " ranks, " << o.type << ", " << o.op << "</text>\n";
  for (double g = 0; g <= ytop + ystep / 2; g += ystep) {  // y grid and labels
    out << "<line x1=\"" << left << "\" x2=\"" << left + plot_w << "\" y1=\"" << y(g) << "\" y2=\""
        << y(g) << "\" stroke=\"#ddd\"/>\n<text x=\"" << left - 6 << "\" y=\"" << y(g) + 4
        << "\" text-anchor=\"end\">" << g << "</text>\n";
  }
  const int xstep = std::max(1, static_cast<int>(std::ceil((xmax - xmin) / 8)));
  for (int e = static_cast<int>(std::ceil(xmin)); e <= xmax; e += xstep) {  // x ticks
    out << "<line x1=\"" << x(std::exp2(e)) << "\" x2=\"" << x(std::exp2(e)) << "\" y1=\""
        << top + plot_h << "\" y2=\"" << top + plot_h + 5 << "\" stroke=\"black\"/>\n<text x=\""
        << x(std::exp2(e)) << "\" y=\"" << top + plot_h + 18 << "\" text-anchor=\"middle\">"
        << size_label(e) << "</text>\n";
  }
  out << "<rect x=\"" << left << "\" y=\"" << top << "\" width=\"" << plot_w << "\" height=\""
      << plot_h << "\" fill=\"none\" stroke=\"black\"/>\n"
      << "<text x=\"" << left + plot_w / 2 << "\" y=\"" << H - 18
      << "\" text-anchor=\"middle\">message size (bytes of the whole buffer, log scale)</text>\n"
      << "<text transform=\"translate(18 " << top + plot_h / 2
      << ") rotate(-90)\" text-anchor=\"middle\">bus bandwidth (GB/s)</text>\n";
  const std::map<std::string, std::string> colors = {{"allreduce", "#1f77b4"},
                                                     {"allgather", "#2ca02c"},
                                                     {"reduce_scatter", "#d62728"},
                                                     {"alltoall", "#9467bd"}};
  int legend = 0;
  for (const auto& collective : o.collectives) {
    for (const auto& impl : o.impls) {
      std::ostringstream points;
      for (const Row& r : rows) {
        if (r.collective == collective && r.impl == impl)
          points << x(r.bytes) << ',' << y(r.busbw) << ' ';
      }
      const std::string dash = impl == "mpi" ? " stroke-dasharray=\"6 4\"" : "";
      const double ly = top + 10 + 20 * legend++;
      out << "<polyline fill=\"none\" stroke=\"" << colors.at(collective) << "\" stroke-width=\"2\""
          << dash << " points=\"" << points.str() << "\"/>\n"
          << "<line x1=\"" << W - right + 15 << "\" x2=\"" << W - right + 45 << "\" y1=\"" << ly
          << "\" y2=\"" << ly << "\" stroke=\"" << colors.at(collective) << "\" stroke-width=\"2\""
          << dash << "/>\n<text x=\"" << W - right + 52 << "\" y=\"" << ly + 4 << "\">"
          << collective << " (" << (impl == "mine" ? "yours" : "MPI") << ")</text>\n";
    }
  }
  out << "</svg>\n";
}

template <class T>
std::vector<Row> run(const Options& o, dtk::Communicator& comm) {
  const int p = comm.Get_size();
  const bool root = comm.Get_rank() == 0;
  if (root) {
    std::printf(
        "# collectives_bench: %d ranks, %s, op %s, %d iterations after %d warm-up "
        "(time: median of the slowest rank's)\n",
        p, o.type.c_str(), o.op.c_str(), o.iters, kWarmupIters);
  }
  std::vector<Row> all;
  for (const auto& collective : o.collectives) {
    if (root) print_header(collective, o);
    std::size_t last = 0;
    for (std::size_t bytes = o.min_bytes; bytes <= o.max_bytes; bytes *= 2) {
      const std::size_t count = element_count(collective, bytes, sizeof(T), p);
      if (count == 0 || count == last) continue;  // too small for p whole blocks
      last = count;
      const std::vector<Row> rows = measure<T>(collective, count, o, comm);
      if (root) print_rows(rows, o);
      all.insert(all.end(), rows.begin(), rows.end());
    }
  }
  return all;
}

// Opens FILE for writing on rank 0; every rank learns whether that worked.
bool open_output(std::ofstream& file, const std::string& path, dtk::Communicator& comm) {
  int ok = 1;
  if (comm.Get_rank() == 0 && !path.empty()) {
    file.open(path);
    ok = file.good();
    if (!ok) std::cerr << "collectives_bench: cannot write '" << path << "'\n";
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, comm.handle());
  return ok;
}

int bench(int argc, char** argv, dtk::Communicator& comm) {
  const bool root = comm.Get_rank() == 0;
  Options o;
  try {
    o = parse(argc, argv);
  } catch (const UsageError& e) {
    if (root) {
      if (*e.what()) std::cerr << "collectives_bench: " << e.what() << "\n";
      (*e.what() ? std::cerr : std::cout) << kUsage;
    }
    return *e.what() ? 2 : 0;
  }
  std::ofstream csv, svg;
  if (!open_output(csv, o.csv, comm) || !open_output(svg, o.svg, comm)) return 2;
  const std::vector<Row> rows = o.type == "float"    ? run<float>(o, comm)
                                : o.type == "double" ? run<double>(o, comm)
                                                     : run<std::int32_t>(o, comm);
  long long wrong = 0;
  for (const Row& r : rows) wrong += r.wrong;
  if (root) {
    std::printf("#\n# Wrong results: %lld%s\n", wrong, wrong ? " (FAILED)" : " (OK)");
    if (csv.is_open()) write_csv(csv, rows, o, comm.Get_size());
    if (svg.is_open()) write_svg(svg, rows, o, comm.Get_size());
  }
  return wrong ? 1 : 0;
}

}  // namespace

int main(int argc, char** argv) {
  dtk::keep_freed_memory();
  dtk::use_single_machine_mpi();
  MPI_Init(&argc, &argv);
  dtk::Communicator world;
  int status = 1;
  try {
    status = bench(argc, argv, world);
  } catch (const std::exception& e) {
    // A collective that threw on one rank may leave the others waiting for it: stop them all.
    std::cerr << "collectives_bench: rank " << world.Get_rank() << ": " << e.what() << "\n";
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return status;
}
