#!/usr/bin/env bash
# Create or remove the Soft-RoCE (rxe) test devices.  Runs as root, inside the
# rxe VM (ci/rxe/guest.sh) or directly on a host whose kernel has rdma_rxe
# (ci/rxe/vm.sh's native mode).
#
#   net.sh up 1 [ENVFILE]   rxe0 on dummy netdev rxenet0, 10.77.0.1/24
#   net.sh up 2 [ENVFILE]   rxe0 on veth0 (10.77.0.1), rxe1 on veth1 (10.77.0.2);
#                           policy routing makes traffic between the two
#                           addresses really cross the veth link
#   net.sh down             remove whatever "up" created
#
# "up" writes RXE_* variables describing the devices (RXE_DEV0, RXE_IP0,
# RXE_GID0, RXE_NETDEV0, ... RXE_DEVICES) to ENVFILE as shell assignments.
# Every address is 10.77.0.x on links this script creates; nothing else on the
# host's network is touched.  The netdev MTU is 9000, so the RoCE MTU is 4096.
#
# Both devices live in one network namespace on purpose: rxe's UDP socket
# lives only in the initial namespace on 6.1 kernels, so QPs between two
# namespaces hang.
set -euo pipefail

MTU=${RXE_NET_MTU:-9000}
TABLE0=7701 # routes from the rxe0 side
TABLE1=7702 # routes from the rxe1 side

note() { printf 'rxe-net: %s\n' "$*" >&2; }
die() {
	note "error: $*"
	exit 1
}

sysctl_set() { # sysctl_set KEY VALUE, without needing procps's sysctl
	printf '%s\n' "$2" >"/proc/sys/${1//.//}"
}

# gid_index DEV IPV4: index of DEV's (port 1) GID that maps IPV4, e.g.
# ::ffff:10.77.0.1 (usually 1: 0 is the IPv6 link-local one).
gid_index() {
	local dev=$1 ip=$2 want g f i a b c d
	IFS=. read -r a b c d <<<"$ip"
	printf -v want '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "$a" "$b" "$c" "$d"
	for ((i = 0; i < 50; i++)); do # the GID table fills asynchronously
		for f in /sys/class/infiniband/"$dev"/ports/1/gids/*; do
			read -r g <"$f" 2>/dev/null || continue
			if [ "$g" = "$want" ]; then
				echo "${f##*/}"
				return 0
			fi
		done
		sleep 0.1
	done
	return 1
}

need_tools() {
	local t
	for t in ip rdma; do
		command -v "$t" >/dev/null || die "'$t' not found (install iproute2)"
	done
	[ -d /sys/module/rdma_rxe ] || die "rdma_rxe is not loaded"
}

add_rxe() { # add_rxe NAME NETDEV
	[ -e "/sys/class/infiniband/$1" ] &&
		die "RDMA device $1 already exists (left over from an earlier run? try: $0 down)"
	rdma link add "$1" type rxe netdev "$2" ||
		die "rdma link add $1 type rxe netdev $2 failed (is crc32_generic loaded?)"
}

# (ip -batch: every exec costs ~0.1 s in the VM under TCG.)
up1() {
	ip -batch - <<-EOF
		link set lo up
		link add rxenet0 mtu $MTU type dummy
		addr add 10.77.0.1/24 dev rxenet0
		link set rxenet0 up
	EOF
	add_rxe rxe0 rxenet0
}

up2() {
	local mac0 mac1 d move_local=
	ip link add veth0 mtu "$MTU" type veth peer name veth1 mtu "$MTU"
	for d in all default veth0 veth1; do
		sysctl_set "net.ipv4.conf.$d.accept_local" 1
		sysctl_set "net.ipv4.conf.$d.rp_filter" 0
	done
	read -r mac0 </sys/class/net/veth0/address
	read -r mac1 </sys/class/net/veth1/address
	# The local table's rule (pref 0) goes behind ours; natively it may have
	# been moved already by an earlier run.
	[ -n "$(ip rule show pref 0 lookup local)" ] && move_local=1
	# noprefixroute: no connected route for 10.77.0.0/24 in the main table;
	# the two policy tables are the only way to reach the peer.
	#
	# Both addresses are local, so by default the kernel would loop the
	# traffic through lo.  Output bound to one side's veth (rxe routes its
	# packets with the netdev as oif; rdma_cm does when the source address
	# is bound) to the other side's address leaves through that veth
	# instead; packets arriving on a veth (no oif) still reach the local
	# table, moved behind our rules, and are delivered (accept_local, no
	# rp_filter).  Fixed neighbour entries: no ARP between two local
	# addresses.  ("iif lo" rules instead of "oif" ones break rdma_cm: its
	# check of an incoming connection request looks the route up with
	# neither iif nor the loopback and expects the local route.)
	ip -batch - <<-EOF
		link set lo up
		addr add 10.77.0.1/24 dev veth0 noprefixroute
		addr add 10.77.0.2/24 dev veth1 noprefixroute
		link set veth0 up
		link set veth1 up
		route add 10.77.0.2/32 dev veth0 src 10.77.0.1 table $TABLE0
		route add 10.77.0.1/32 dev veth1 src 10.77.0.2 table $TABLE1
		rule add pref 100 oif veth0 to 10.77.0.2/32 lookup $TABLE0
		rule add pref 101 oif veth1 to 10.77.0.1/32 lookup $TABLE1
		${move_local:+rule add pref 1000 lookup local}
		${move_local:+rule del pref 0 lookup local}
		neigh replace 10.77.0.2 lladdr $mac1 dev veth0 nud permanent
		neigh replace 10.77.0.1 lladdr $mac0 dev veth1 nud permanent
	EOF
	add_rxe rxe0 veth0
	add_rxe rxe1 veth1
}

write_env() { # write_env N FILE
	local n=$1 out=$2 i dev ip nd gid
	{
		echo "RXE_DEVICES=$n"
		for ((i = 0; i < n; i++)); do
			dev=rxe$i
			ip=10.77.0.$((i + 1))
			if [ "$n" = 1 ]; then nd=rxenet0; else nd=veth$i; fi
			gid=$(gid_index "$dev" "$ip") || die "$dev has no GID for $ip"
			echo "RXE_DEV$i=$dev"
			echo "RXE_IP$i=$ip"
			echo "RXE_NETDEV$i=$nd"
			echo "RXE_GID$i=$gid"
		done
	} >"$out"
}

down() {
	local d
	for d in rxe0 rxe1; do
		[ -e "/sys/class/infiniband/$d" ] && rdma link delete "$d" 2>/dev/null
	done
	ip link del rxenet0 2>/dev/null || true
	ip link del veth0 2>/dev/null || true
	ip rule del pref 100 2>/dev/null || true
	ip rule del pref 101 2>/dev/null || true
	ip route flush table "$TABLE0" 2>/dev/null || true
	ip route flush table "$TABLE1" 2>/dev/null || true
	if ! ip rule show pref 0 | grep -q 'lookup local'; then
		ip rule add pref 0 lookup local
		ip rule del pref 1000 lookup local 2>/dev/null || true
	fi
	return 0
}

case "${1:-}" in
up)
	n=${2:-}
	envfile=${3:-/dev/null}
	case "$n" in
	1 | 2) ;;
	*) die "usage: $0 up 1|2 [ENVFILE]" ;;
	esac
	need_tools
	"up$n"
	write_env "$n" "$envfile"
	;;
down) down ;;
*) die "usage: $0 up 1|2 [ENVFILE] | down" ;;
esac
