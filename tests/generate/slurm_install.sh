#!/usr/bin/env bash
# Install the vendored current Slurm beside Debian's slurm-wlm 22.05, so the system tests load
# each Slurm target's files in the matching slurmctld (test_slurm_system.py).
#
#   bash tests/generate/slurm_install.sh [SHARED]     (default: shared/ beside the checkout)
#
# The tarball is a build of SchedMD's Slurm whose compiled-in prefix is /opt/clusterforge-slurm
# (slurmd starts slurmstepd and loads its plugins from there), so it is unpacked at that path;
# munge (Debian's package) is its only run-time dependency. A marker named after the tarball's
# hash makes a second run a no-op. Without the tarball it says so and exits 0: the 25.11 system
# tests then skip with a reason.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
shared=${1:-$(dirname "$root")/shared}
prefix=/opt/clusterforge-slurm
tarball=$(ls "$shared"/vendor/slurm/slurm-*-debian12-amd64.tar.xz 2>/dev/null | sort -V | tail -n 1 || true)
if [ -z "$tarball" ]; then
  echo "slurm-install: no vendored Slurm under $shared/vendor/slurm; the 25.11 system tests will skip"
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "slurm-install: not root, cannot write $prefix; the 25.11 system tests will skip"
  exit 0
fi
marker=$prefix/.installed-$(sha256sum "$tarball" | cut -c1-16)
(
  flock 9
  if [ ! -f "$marker" ]; then
    # Every member must lie under opt/clusterforge-slurm/: nothing else on the machine changes.
    outside=$(tar -tJf "$tarball" | grep -v '^opt/clusterforge-slurm\(/\|$\)' || true)
    if [ -n "$outside" ]; then
      echo "slurm-install: $tarball holds files outside $prefix; not installed" >&2
      exit 1
    fi
    staging=$(mktemp -d /opt/.clusterforge-slurm-XXXXXX)
    tar -xJf "$tarball" -C "$staging"
    rm -rf "$prefix"
    mv "$staging/opt/clusterforge-slurm" "$prefix"
    rm -rf "$staging"
    touch "$marker"
  fi
) 9>/opt/.clusterforge-slurm.lock
echo "slurm-install: $(LD_LIBRARY_PATH=$prefix/lib "$prefix/sbin/slurmctld" -V) in $prefix"
