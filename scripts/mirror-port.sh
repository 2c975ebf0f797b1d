#!/bin/sh
# mirror-port.sh — a mirror port on one machine, as a DPU's mirror rule gives one (docs/testing.md):
#
#   scripts/mirror-port.sh up NAME [SUBNET]   (SUBNET: the /24 prefix, default 10.213.0)
#   scripts/mirror-port.sh down NAME
#
# up creates network namespace NAME with the clients' end of a veth pair (NAMEc, SUBNET.2) whose
# other end is the app's interface in this namespace (NAMEa, SUBNET.1), and a second veth pair
# NAMEm (the mirror's sending end) / NAMEp (the port to capture on, no address). tc's clsact
# qdisc on NAMEa mirrors every packet it receives (clients → app) and sends (app → clients) to
# NAMEm, so NAMEp receives a copy of the app's traffic while the app's TCP is untouched. Offloads
# that would merge segments (GRO/GSO/TSO) are turned off on NAMEa, as a NIC mirror sees wire
# packets (u32 match-all: this kernel has no matchall classifier). Clients run in the namespace: ip netns exec NAME CLIENT SUBNET.1 ...
# down removes all of it; both are idempotent. Needs root (CAP_NET_ADMIN): otherwise prints one
# line saying so and exits 3 (tests treat that as a skip). NAME: 1 to 11 letters, digits, - or _.
set -eu

usage() {
  echo "usage: $0 up|down NAME [SUBNET]" >&2
  exit 2
}

[ $# -ge 2 ] || usage
action=$1
name=$2
subnet=${3:-10.213.0}
case $name in
  *[!A-Za-z0-9_-]* | '') usage ;;
esac
[ ${#name} -le 11 ] || { echo "$0: NAME '$name' is longer than 11 characters (interface names add a letter, 15 at most)" >&2; exit 2; }
case $subnet in
  *[!0-9.]* | '') usage ;;
esac

if [ "$(id -u)" -ne 0 ]; then
  echo "mirror-port: skipped: needs root (CAP_NET_ADMIN) to create namespace $name and its veth pairs"
  exit 3
fi
for tool in ip tc; do
  command -v $tool > /dev/null || { echo "mirror-port: skipped: $tool not found (install iproute2)"; exit 3; }
done

app=${name}a
client=${name}c
mirror=${name}m
port=${name}p

down() {
  ip link del "$app" 2> /dev/null || true     # also removes its peer in the namespace
  ip link del "$mirror" 2> /dev/null || true  # also removes the capture port
  ip netns del "$name" 2> /dev/null || true
}

case $action in
  down)
    down
    ;;
  up)
    down
    trap 'down' EXIT
    ip netns add "$name"
    ip link add "$app" type veth peer name "$client" netns "$name"
    ip addr add "$subnet.1/24" dev "$app"
    ip link set "$app" up
    ip -n "$name" addr add "$subnet.2/24" dev "$client"
    ip -n "$name" link set "$client" up
    ip -n "$name" link set lo up
    ip link add "$mirror" type veth peer name "$port"
    ip link set "$mirror" up
    ip link set "$port" up
    # Wire-sized packets on the app's link, as a NIC mirror would see them.
    if command -v ethtool > /dev/null; then
      ethtool -K "$app" gro off gso off tso off > /dev/null 2>&1 || true
      ip netns exec "$name" ethtool -K "$client" gro off gso off tso off > /dev/null 2>&1 || true
    else
      ip link set "$app" gso_max_size 1500 2> /dev/null || true
      ip -n "$name" link set "$client" gso_max_size 1500 2> /dev/null || true
    fi
    tc qdisc add dev "$app" clsact
    tc filter add dev "$app" ingress u32 match u32 0 0 action mirred egress mirror dev "$mirror"
    tc filter add dev "$app" egress u32 match u32 0 0 action mirred egress mirror dev "$mirror"
    trap - EXIT
    echo "mirror-port: up: app $app $subnet.1, clients in netns $name ($client $subnet.2), capture on $port"
    ;;
  *)
    usage
    ;;
esac
