#!/usr/bin/env bash
# Makes sure the Debian packages dtk builds and runs with are installed.
# As root it installs the missing ones with apt-get; otherwise it prints the exact command to
# run and fails. On a system without dpkg (macOS, say) it checks nothing: CMake will say what
# it cannot find (handout.md lists the Homebrew packages).
#
# usage: scripts/ensure-deps.sh [--grading-only] [extra-package ...]
#   --grading-only   what dtk-grade needs, without the training data (a Gradescope image)
set -euo pipefail

# The training data: Fashion-MNIST (/usr/share/datasets/fashion-mnist) for the MLP, and the King
# James Bible (the program `bible`) for the GPT.
data=(dataset-fashion-mnist bible-kjv)
if [ "${1:-}" = --grading-only ]; then
  data=()
  shift
fi
packages=(
  g++ make cmake                        # the toolchain
  libopenmpi-dev openmpi-bin            # MPI: headers, libraries, mpirun
  xtensor-dev libxtensor-blas-dev       # tensors and their BLAS bindings
  libopenblas-dev liblapack-dev         # BLAS/LAPACK behind xtensor-blas
  nlohmann-json3-dev                    # JSON (model configs, results.json)
  catch2                                # Catch2 v2, the test framework
  zlib1g-dev                            # reading gzipped IDX files
  ${data[@]+"${data[@]}"}
  "$@"
)

command -v dpkg-query > /dev/null || exit 0

missing=()
for package in "${packages[@]}"; do
  status=$(dpkg-query -W -f='${Status}' "$package" 2> /dev/null || true)
  [ "$status" = "install ok installed" ] || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "dtk needs these Debian packages, which are not installed. Install them with:" >&2
  echo "  sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi

echo "dtk: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" > /dev/null
