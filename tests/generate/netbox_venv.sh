#!/usr/bin/env bash
# Build the virtualenv of the vendored NetBox before the test suite runs, so that the NetBox
# system test (test_netbox_system.py) spends its time importing, not installing.
#
#   bash tests/generate/netbox_venv.sh [SHARED]     (default: shared/ beside the checkout)
#
# The venv is the one netbox-up.sh (SHARED/notes) looks for: NETBOX_VENV, else
# ${XDG_CACHE_HOME:-~/.cache}/netbox-<version>-venv, marked with the hash of requirements.txt;
# it holds NetBox's requirements.txt less the documentation toolchain, with psycopg's binary
# wheel. Django 6 needs Python >= 3.12 (NETBOX_PYTHON, else python3.12/3.13, else pyenv's).
# Without a vendored NetBox it says so and exits 0: the system test then skips with a reason.
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
shared=${1:-$(dirname "$root")/shared}
src=$shared/vendor/netbox
if [ ! -f "$src/requirements.txt" ] || [ ! -f "$src/netbox/release.yaml" ]; then
  echo "netbox-venv: no vendored NetBox at $src; test_netbox_system.py will skip"
  exit 0
fi
version=$(sed -n 's/^version: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p' "$src/netbox/release.yaml")
venv=${NETBOX_VENV:-${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/netbox-$version-venv}
marker="$venv/.netbox-requirements-$(sha256sum "$src/requirements.txt" | cut -c1-16)"
if [ -f "$marker" ]; then
  echo "netbox-venv: $venv is current"
  exit 0
fi

py_ok() { "$1" -c 'import sys; sys.exit(sys.version_info < (3, 12))' >/dev/null 2>&1; }
find_python() {
  local p
  if [ -n "${NETBOX_PYTHON:-}" ]; then echo "$NETBOX_PYTHON"; return; fi
  for p in python3.12 python3.13 python3; do
    if command -v "$p" >/dev/null && py_ok "$p"; then command -v "$p"; return; fi
  done
  if command -v pyenv >/dev/null; then
    for p in "$(pyenv root)"/versions/3.1[2-9]*/bin/python3; do
      if [ -x "$p" ] && py_ok "$p"; then echo "$p"; return; fi
    done
  fi
  return 1
}
py=$(find_python) || {
  echo "netbox-venv: no Python >= 3.12 (NetBox needs Django 6); test_netbox_system.py will skip"
  exit 0
}
mkdir -p "$(dirname "$venv")"
(
  flock 9
  if [ ! -f "$marker" ]; then
    if [ -f "$venv/pyvenv.cfg" ]; then rm -rf "$venv"; fi
    "$py" -m venv "$venv"
    grep -v -E '^(mkdocs|mkdocs-material|mkdocstrings|mkdocstrings-python|zensical)==' \
      "$src/requirements.txt" | sed 's/^psycopg\[c,pool\]/psycopg[binary,pool]/' \
      >"$venv/requirements-runtime.txt"
    "$venv/bin/pip" install -q --disable-pip-version-check -r "$venv/requirements-runtime.txt" \
      >"$venv/pip-install.log" 2>&1 || { tail -n 30 "$venv/pip-install.log" >&2; exit 1; }
    touch "$marker"
  fi
) 9>"$venv.lock"
echo "netbox-venv: built $venv with $py"
