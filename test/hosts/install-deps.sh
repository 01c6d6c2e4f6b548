#!/usr/bin/env bash
# install-deps.sh - installs, from Debian's packages, what the multi-host tests need: Slurm and munge (the Slurm
# tests), Open MPI (the MPI tests), iproute2 and util-linux (network namespaces, tc, nsenter). Needs root; without
# it (or without apt-get) it says so and leaves the tests to report why they cannot run.
set -euo pipefail
need=()
for c in srun slurmd slurmctld munged mpirun ip tc nsenter unshare; do command -v "$c" >/dev/null 2>&1 || need+=("$c"); done
((${#need[@]} == 0)) && exit 0
if [[ $(id -u) != 0 ]] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-deps.sh: missing ${need[*]}; not root or no apt-get, so not installing: the multi-host tests will say they cannot run" >&2
  exit 0
fi
echo "install-deps.sh: installing slurm-wlm munge openmpi-bin iproute2 util-linux (missing: ${need[*]})" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends slurm-wlm munge openmpi-bin iproute2 util-linux >/dev/null
