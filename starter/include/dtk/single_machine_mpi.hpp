// Open MPI's start-up on one machine, called first in main (before MPI_Init). By default every
// rank opens every transport and network plugin it has (Omni-Path, libfabric, UCX, TCP) and
// reads every PCI device's configuration to place itself near a network card: about 0.2 s of
// CPU a rank, and more than the work of a short test. Ranks that all run on this machine talk
// through shared memory only ("vader"), so when they do (or when the program runs alone), the
// other plugins and the PCI scan are skipped. Across machines (srun, or mpirun over several
// hosts) nothing changes, and a setting the user made (OMPI_MCA_btl, say) always wins.
#pragma once

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

namespace dtk {

// The settings, as environment variables: the grader gives them to every mpirun it starts.
inline const std::vector<std::pair<std::string, std::string>>& single_machine_mpi_settings() {
  static const std::vector<std::pair<std::string, std::string>> settings = {
      {"OMPI_MCA_btl", "self,vader"},  // shared memory, and a rank to itself
      {"OMPI_MCA_pml", "ob1"},         // the point-to-point layer over those two
      {"OMPI_MCA_mtl", "^ofi,psm2"},   // no network card libraries
      {"OMPI_MCA_osc", "^ucx,rdma"},
      {"HWLOC_COMPONENTS", "-pci,-linuxio,-opencl,-cuda,-nvml,-rsmi,-levelzero,-gl"}};
  return settings;
}

// Whether every rank of this run is on this machine: mpirun says how many ranks it started here
// and in all; a program started alone (a singleton) is one rank. Another launcher (srun) may
// spread ranks over machines without saying so: not known, so no.
inline bool all_ranks_on_this_machine() {
  const char* world = std::getenv("OMPI_COMM_WORLD_SIZE");
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  if (world && local) return std::string(world) == local;
  for (const char* launcher : {"PMIX_RANK", "PMI_RANK", "SLURM_PROCID"}) {
    if (std::getenv(launcher)) return false;
  }
  return true;
}

// This process, about to call MPI_Init, uses the single-machine settings when they apply.
inline void use_single_machine_mpi() {
  if (!all_ranks_on_this_machine()) return;
  for (const auto& [name, value] : single_machine_mpi_settings()) {
    setenv(name.c_str(), value.c_str(), /*overwrite=*/0);
  }
}

}  // namespace dtk
