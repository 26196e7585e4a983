#!/bin/sh
# IMEX setup for cluster nvl72, written by `clusterforge generate`.
# Every tray of one NVLink domain (one rack-scale system) runs nvidia-imex with the IP
# addresses of all trays of that domain in /etc/nvidia-imex/nodes_config.cfg (NVIDIA IMEX guide,
# "NVLink domain wide" deployment), and CUDA's fabric-memory calls need an IMEX channel
# device: the driver registers the character device but creates no channel, and without
# /dev/nvidia-caps-imex-channels/channel0 those calls fail with a permission error (NVIDIA IMEX guide,
# "IMEX Channels").  Channels do not survive a reboot: run this on each tray, as root, at
# every boot, after the driver and its nvidia-imex package are loaded and the trays resolve
# in DNS (running it again changes nothing that is already right):
#   clusterforge-imex-setup.sh [node-name]
# IMEX_ROOT (default empty) prefixes every path the script reads or writes.
set -eu
node="${1:-$(hostname -s)}"
root="${IMEX_ROOT:-}"
config="$root/etc/nvidia-imex/nodes_config.cfg"
channel_dir="$root/dev/nvidia-caps-imex-channels"
channel="$channel_dir/channel0"
domain=""
while read -r block hosts; do
    for host in $(scontrol show hostnames "$hosts"); do
        if [ "$host" = "$node" ]; then
            domain="$hosts"
        fi
    done
done <<'DOMAINS'
nvl-r001-01 gpu-[0001-0018]
nvl-r001-03 gpu-[0019-0036]
nvl-r001-05 gpu-[0037-0054]
DOMAINS
if [ -z "$domain" ]; then
    echo "$node is in no NVLink domain of cluster nvl72" >&2
    exit 1
fi

# The default channel: minor 0 of the major number the driver registered, readable and
# writable by every user (0666, root:root), as the guide creates it.
major="$(awk '$2 == "nvidia-caps-imex-channels" { print $1 }' "$root/proc/devices")"
if [ -z "$major" ]; then
    echo "no nvidia-caps-imex-channels in $root/proc/devices: load the NVIDIA driver first" >&2
    exit 1
fi
mkdir -p "$channel_dir"
chmod 0755 "$channel_dir"
if [ ! -c "$channel" ] || [ "$(stat -c '%t:%T' "$channel")" != "$(printf '%x:0' "$major")" ]; then
    rm -f "$channel"
    mknod -m 0666 "$channel" c "$major" 0
fi
chown root:root "$channel"
chmod 0666 "$channel"

mkdir -p "$(dirname "$config")"
: > "$config.new"
for host in $(scontrol show hostnames "$domain"); do
    address="$(getent ahostsv4 "$host" | awk 'NR == 1 { print $1 }')"
    if [ -z "$address" ]; then
        echo "cannot resolve $host: IMEX needs every tray's IP address" >&2
        exit 1
    fi
    echo "$address" >> "$config.new"
done
mv "$config.new" "$config"
systemctl enable nvidia-imex
systemctl restart nvidia-imex
