#!/bin/bash
# Security preflight for cluster lab, written by `clusterforge generate`.
# Run as root on every node before starting munged and the Slurm daemons; exit 1 names
# each problem.  munged refuses a key others can read; slurmdbd refuses a slurmdbd.conf
# others can read.  Override the paths with MUNGE_KEY= and SLURMDBD_CONF= if yours differ.
MUNGE_KEY="${MUNGE_KEY:-/etc/munge/munge.key}"
SLURMDBD_CONF="${SLURMDBD_CONF:-/etc/slurm/slurmdbd.conf}"
status=0

fail() {
    echo "FAIL: $*"
    status=1
}

# check_file PATH OWNER: PATH must belong to OWNER with mode 0400 or 0600.
check_file() {
    local owner mode
    owner=$(stat -c %U "$1") || { fail "$1: cannot stat"; return; }
    mode=$(stat -c %a "$1")
    [ "$owner" = "$2" ] || fail "$1 is owned by $owner, not $2 (chown $2: $1)"
    case "$mode" in
        400 | 600) ;;
        *) fail "$1 has mode $mode, not 0400 or 0600 (chmod 0400 $1)" ;;
    esac
}

if [ -e "$MUNGE_KEY" ]; then
    check_file "$MUNGE_KEY" munge
else
    fail "$MUNGE_KEY is missing (copy the cluster's key from the head node over ssh)"
fi
# slurmdbd.conf holds the database password: only the accounting host has it.
if [ -e "$SLURMDBD_CONF" ]; then
    check_file "$SLURMDBD_CONF" slurm
fi
[ "$status" -eq 0 ] && echo "OK: munge key and slurmdbd.conf are private"
exit "$status"
