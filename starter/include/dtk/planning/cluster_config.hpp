// Part 13 (provided): the cluster a training run uses, read from a JSON file.
//
//   {"gpus": 64, "gpus_per_node": 8, "peak_tflops": 989, "memory_gb": 80,
//    "intra_node_gbps": 450, "inter_node_gbps": 50}
//
// Bandwidths are in GB/s (10⁹ bytes per second, not bits), per GPU, in each direction: what a
// ring collective reaches between GPUs of one node (NVLink) and of different nodes (each
// GPU's network card), the "bus bandwidth" collectives_bench and nccl-tests report (Part 7).
// The calibration keys are optional and default as below; bench/planner_calibration.sh measures
// them for this machine.
#pragma once

#include <string>

namespace dtk {

struct ClusterConfig {
  int gpus;  // in all; a multiple of gpus_per_node (or fewer than one node)
  int gpus_per_node;
  double peak_tflops;      // one GPU's peak (dense, 16-bit): the denominator of MFU
  double memory_gb;        // one GPU's memory, GB = 10⁹ bytes
  double intra_node_gbps;  // GB/s between GPUs of one node
  double inter_node_gbps;  // GB/s between nodes
  // Calibration: the rate a training step's matrix products run at, per GPU ("gemm_tflops";
  // default 0.75 · peak_tflops, what large bf16 GEMMs reach on recent GPUs), the latency of
  // one message (the α of Part 7's α–β model) within a node and between nodes ("intra_node_us",
  // default 5 µs; "inter_node_us", default 10 µs), and the bytes of one number of the
  // activations, gradients and messages ("value_bytes": 2, bf16; 4 for fp32, gpt_train's
  // default: its --dtype bf16 keeps 2-byte activations and gradients but sends floats).
  double gemm_tflops = 0;  // 0: the default, 0.75 · peak_tflops
  // The rate a mixture of experts' expert MLPs run at ("expert_gemm_tflops", default
  // gemm_tflops): smaller matrices, one per expert, and the tokens gathered to them and back.
  double expert_gemm_tflops = 0;
  double intra_node_us = 5;
  double inter_node_us = 10;
  int value_bytes = 2;

  double gemm_rate() const { return (gemm_tflops > 0 ? gemm_tflops : 0.75 * peak_tflops) * 1e12; }
  double expert_gemm_rate() const {
    return expert_gemm_tflops > 0 ? expert_gemm_tflops * 1e12 : gemm_rate();
  }
};

// Throws std::runtime_error with one line naming the file and the problem (missing file, not
// JSON, a missing key, a value out of range, an unknown key).
ClusterConfig load_cluster_config(const std::string& path);

}  // namespace dtk
