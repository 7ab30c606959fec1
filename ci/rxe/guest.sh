#!/bin/bash
# Runs inside the rxe VM as root, chrooted into the host's root filesystem
# (9p, read-only), started by ci/rxe/init.  vm.sh copies it into the run's
# control folder, mounted here on /run/rxe:
#   config   RXE_KROOT RXE_KVER RXE_DEVICES RXE_CWD RXE_SHARES (shell)
#   argv     the command, NUL-separated
#   env      exports passed through from the host (shell)
#   net.sh   copy of ci/rxe/net.sh
#   modprobe wrapper for the kernel's module auto-loading
# It writes: started (the command is about to run), status (its exit code),
# setup-error (why rxe or the environment could not be set up).
set -uo pipefail
ctl=/run/rxe
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

note() { printf 'rxe-guest: %s\n' "$*" >&2; }
die() {
	note "error: $*"
	printf '%s\n' "$*" >"$ctl/setup-error"
	exit 1
}

# shellcheck source=/dev/null
. "$ctl/config" || die "cannot read $ctl/config"
if [ "${RXE_DEBUG:-0}" = 1 ]; then
	PS4='+ [$(cut -d" " -f1 /proc/uptime)] '
	set -x
fi

# The console is the host's terminal: no CR added to every LF.
# (Every exec costs ~0.1 s under TCG: builtins where possible.)
stty -onlcr 2>/dev/null </dev/console || true
echo rxe-vm >/proc/sys/kernel/hostname

# Kernel module auto-loading must use the VM kernel's modules, which are in
# the (read-only) cache folder, not in the host's /lib/modules.
printf '%s\n' "$ctl/modprobe" >/proc/sys/kernel/modprobe
mp() { modprobe -d "$RXE_KROOT" "$@"; }

# Extra writable shares, at the same paths as on the host.
for s in "${RXE_SHARES[@]}"; do
	tag=${s%%=*} path=${s#*=}
	mkdir -p "$path" 2>/dev/null || true
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000,cache=none \
		"$tag" "$path" || die "cannot mount share $path (9p tag $tag)"
done

if [ "$RXE_DEVICES" != 0 ]; then
	# crc32_generic is not a declared dependency of rdma_rxe, but without it
	# "rdma link add" fails with ENOENT.
	mp -a veth dummy crc32_generic ib_uverbs rdma_rxe rdma_ucm ib_umad ||
		die "loading the RDMA modules failed"
	# net.sh brings lo up too.
	bash "$ctl/net.sh" up "$RXE_DEVICES" "$ctl/rxe.env" ||
		die "setting up $RXE_DEVICES rxe device(s) failed"
else
	ip link set lo up || die "ip link set lo up"
	: >"$ctl/rxe.env"
fi

cd "$RXE_CWD" 2>/dev/null || die "cannot cd to $RXE_CWD in the VM (under /tmp? the guest's /tmp is its own tmpfs)"
mapfile -d '' argv <"$ctl/argv"
[ "${#argv[@]}" -gt 0 ] || die "no command"

read -r up _ </proc/uptime
echo "$up" >"$ctl/started" # boot-to-command time
# A clean environment: a fixed PATH/HOME/locale, the RXE_* device variables,
# then what vm.sh passed through.  No stdin: the console is not a terminal
# anyone types into.
(
	for v in $(compgen -e); do unset "$v"; done
	export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
		HOME=/tmp USER=root LOGNAME=root SHELL=/bin/bash TERM=dumb \
		LANG=C.UTF-8 RXE_VM=1 RXE_KVER="$RXE_KVER"
	set -a
	# shellcheck source=/dev/null
	. "$ctl/rxe.env"
	# shellcheck source=/dev/null
	. "$ctl/env"
	set +a +x
	exec "${argv[@]}"
) </dev/null
rc=$?
printf '%s\n' "$rc" >"$ctl/status"
exit "$rc"
