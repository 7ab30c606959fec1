#!/usr/bin/env bash
# Run a command where real Soft-RoCE (rxe) RDMA devices exist.
#
#   ci/rxe/vm.sh [options] -- COMMAND [ARGS...]
#   ci/rxe/vm.sh --prepare          only download/extract/build the caches
#
# Options:
#   --devices 0|1|2  rxe devices to create (default 1): 1 = rxe0 on a dummy
#                    netdev (10.77.0.1); 2 = rxe0/rxe1 on a veth pair
#                    (10.77.0.1/10.77.0.2); 0 = none
#   --timeout S      kill the VM (or the command, natively) after S seconds
#                    (default 600)
#   --share DIR      make DIR writable in the VM, at the same path (repeatable;
#                    everything else of the host's / is read-only there)
#   --env NAME       pass the host's variable NAME to the command (repeatable;
#                    TV_*, RDMA_*, RXE_* and CTEST_* always are)
#   --mode M         auto (default) | vm | native: native runs COMMAND right
#                    here after creating the rxe devices, and needs a kernel
#                    with rdma_rxe; auto picks native when this kernel has it
#   --mem MB --smp N the VM's memory (default 1024) and vCPUs (default 2)
#   --pin            pin vCPU k's thread to host CPU k (mod the host's CPUs),
#                    for benchmarks: the host's scheduler then cannot put
#                    both on one core (VM only; RXE_PIN_VCPUS=1 does the same)
#   --keep           keep the run's control folder (console.log, status, ...)
#   --prepare        prepare the caches and exit
#
# The VM boots Debian's stock kernel (linux-image-amd64, which has rdma_rxe)
# under qemu with a tiny busybox initramfs; the root filesystem is the host's
# own / over 9p, read-only, so host binaries and the repo's build folders work
# unchanged.  The command runs as root in the current directory with a clean
# environment (PATH, HOME=/tmp, LANG=C.UTF-8, RXE_* device variables from
# net.sh, the passed-through variables).  Its output is the VM's serial
# console, streamed here.  The guest's /tmp is its own tmpfs: write results
# to a --share folder or the run's control folder, not to the host's /tmp.
#
# Exit status: the command's; 124 if the timeout hit while it ran; 125 if the
# VM failed to boot, timed out before the command started, crashed, or could
# not set up rxe (the message on stderr says which).
#
# Environment: RXE_CACHE_DIR (default <repo>/build-rxe), RXE_ACCEL (kvm|tcg,
# default: kvm only on real hardware virtualisation), RXE_DEBUG=1 (kernel
# log, set -x in the guest), RXE_KERNEL_PKG (e.g. linux-image-6.1.0-56-amd64).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cache=${RXE_CACHE_DIR:-$repo/build-rxe}

say() { printf 'rxe-vm: %s\n' "$*" >&2; }
die() {
	say "error: $*"
	exit 125
}

devices=1 timeout=600 mode=${RXE_MODE:-auto} mem=1024 smp=2 keep=0 prepare_only=0
pin=${RXE_PIN_VCPUS:-0}
shares=() envs=()
while [ $# -gt 0 ]; do
	case "$1" in
	--devices) devices=${2:?}; shift 2 ;;
	--timeout) timeout=${2:?}; shift 2 ;;
	--share) shares+=("${2:?}"); shift 2 ;;
	--env) envs+=("${2:?}"); shift 2 ;;
	--mode) mode=${2:?}; shift 2 ;;
	--mem) mem=${2:?}; shift 2 ;;
	--smp) smp=${2:?}; shift 2 ;;
	--pin) pin=1; shift ;;
	--keep) keep=1; shift ;;
	--prepare) prepare_only=1; shift ;;
	--) shift; break ;;
	-h | --help) sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
	-*) die "unknown option $1 (see --help)" ;;
	*) break ;;
	esac
done
case "$devices" in 0 | 1 | 2) ;; *) die "--devices must be 0, 1 or 2" ;; esac
if ! [[ "$timeout" =~ ^[0-9]+$ ]] || [ "$timeout" -eq 0 ]; then
	die "--timeout must be a positive number of seconds"
fi
case "$mode" in auto | vm | native) ;; *) die "--mode must be auto, vm or native" ;; esac
[ "$prepare_only" = 1 ] || [ $# -gt 0 ] || die "no command (usage: $0 [options] -- COMMAND [ARGS...])"

t0=$(date +%s%N)
elapsed() { # seconds since the start, one decimal
	local ms=$((($(date +%s%N) - t0) / 1000000))
	printf '%d.%d' $((ms / 1000)) $((ms % 1000 / 100))
}

# ---------------------------------------------------------------- native mode
host_has_rxe() {
	[ "$(id -u)" = 0 ] || return 1
	command -v rdma >/dev/null || return 1
	[ -d /sys/module/rdma_rxe ] || modprobe -q rdma_rxe 2>/dev/null
}

run_native() {
	[ "$(id -u)" = 0 ] || die "native mode needs root"
	modprobe -q rdma_rxe 2>/dev/null || [ -d /sys/module/rdma_rxe ] ||
		die "this kernel has no rdma_rxe (use --mode vm)"
	modprobe -q crc32_generic 2>/dev/null || true
	local envfile rc=0
	envfile=$(mktemp)
	if [ "$devices" != 0 ]; then
		trap 'bash "$here/net.sh" down; rm -f "$envfile"' EXIT
		trap 'exit 130' INT TERM
		bash "$here/net.sh" up "$devices" "$envfile" || die "setting up $devices rxe device(s) failed"
	fi
	say "native rxe ($devices device(s)); running: $*"
	(
		set -a
		# shellcheck source=/dev/null
		. "$envfile"
		set +a
		exec timeout -k 10 "$timeout" "$@"
	) || rc=$?
	[ "$rc" = 124 ] && say "error: the command timed out after ${timeout}s"
	exit "$rc"
}

if [ "$prepare_only" = 0 ]; then
	if [ "$mode" = native ] || { [ "$mode" = auto ] && host_has_rxe; }; then
		run_native "$@"
	fi
fi

# ------------------------------------------------------------------- caches
case "$cache/" in /tmp/*) die "the cache folder $cache is under /tmp, which the VM cannot see (set RXE_CACHE_DIR)" ;; esac
[[ "$cache" =~ [[:space:],] ]] && die "the cache folder path must not contain spaces or commas: $cache"
mkdir -p "$cache/debs" "$cache/kernel" "$cache/run"

for t in qemu-system-x86_64 xz cpio depmod dpkg apt-get; do
	command -v "$t" >/dev/null || die "'$t' not found; run: bash ci/install-deps.sh qemu-system-x86 xz-utils cpio kmod busybox-static rdma-core ibverbs-utils ibverbs-providers perftest rdmacm-utils iproute2"
done
busybox=/bin/busybox
if [ ! -x "$busybox" ] || ldd "$busybox" >/dev/null 2>&1; then
	die "no static $busybox (install busybox-static)"
fi

# Serialise preparation between concurrent runs.
exec 9>"$cache/.lock"
flock 9

# The package behind linux-image-amd64, e.g. linux-image-6.1.0-56-amd64.
# apt-cache takes ~1 s: its answer is kept until apt's lists change.
resolve_kernel_pkg() {
	local p stamp memo=$cache/kernel/resolved
	[ -n "${RXE_KERNEL_PKG:-}" ] && { echo "$RXE_KERNEL_PKG"; return; }
	stamp=$(stat -c %Y /var/lib/apt/lists 2>/dev/null || echo none)
	if [ -e "$memo" ] && read -r s p <"$memo" && [ "$s" = "$stamp" ] && [ -n "$p" ]; then
		echo "$p"
		return
	fi
	p=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}')
	[ -n "$p" ] && echo "$stamp $p" >"$memo"
	if [ -z "$p" ]; then
		# No apt lists: use the newest cached kernel, else update apt.
		p=$(find "$cache/kernel" -maxdepth 1 -name 'linux-image-*' -printf '%f\n' 2>/dev/null | sort -V | tail -1)
		if [ -z "$p" ]; then
			say "apt-get update (to resolve linux-image-amd64)"
			apt-get update -qq >/dev/null || die "apt-get update failed"
			p=$(apt-cache depends linux-image-amd64 2>/dev/null | awk '/Depends: linux-image-/{print $2; exit}')
			stamp=$(stat -c %Y /var/lib/apt/lists 2>/dev/null || echo none)
			[ -n "$p" ] && echo "$stamp $p" >"$memo"
		fi
	fi
	[ -n "$p" ] || die "cannot resolve the package behind linux-image-amd64"
	echo "$p"
}

kpkg=$(resolve_kernel_pkg)
kver=${kpkg#linux-image-}
kroot=$cache/kernel/$kpkg # dpkg -x root: boot/, lib/modules/$kver
if [ ! -e "$kroot/.done" ]; then
	deb=$(find "$cache/debs" -maxdepth 1 -name "${kpkg}_*.deb" | sort -V | tail -1)
	if [ -z "$deb" ]; then
		say "downloading $kpkg"
		(cd "$cache/debs" && apt-get download -q "$kpkg" 2>&1 |
			{ grep -v '^W: Download is performed unsandboxed' >&2 || true; }) ||
			die "apt-get download $kpkg failed"
		deb=$(find "$cache/debs" -maxdepth 1 -name "${kpkg}_*.deb" | sort -V | tail -1)
		[ -n "$deb" ] || die "apt-get download $kpkg produced no .deb"
	fi
	say "extracting $(basename "$deb")"
	rm -rf "$kroot"
	dpkg -x "$deb" "$kroot.tmp" || die "dpkg -x $deb failed"
	depmod -b "$kroot.tmp" "$kver" || die "depmod failed"
	# Cut the xz-compressed vmlinux (ELF) out of the bzImage: qemu boots it
	# directly, which saves the in-guest decompression (~2 s under TCG).
	vmlinuz=$kroot.tmp/boot/vmlinuz-$kver
	off=$(LC_ALL=C grep -obUaP '\xFD7zXZ\x00' "$vmlinuz" | head -1 | cut -d: -f1 || true)
	# (tail gets SIGPIPE when xz stops at the stream's end: ignore it.)
	if [ -n "$off" ] && { tail -c +"$((off + 1))" "$vmlinuz" || true; } |
		xz -dc --single-stream >"$kroot.tmp/vmlinux" 2>/dev/null &&
		[ "$(head -c 4 "$kroot.tmp/vmlinux" | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
		:
	else
		say "warning: could not extract vmlinux, booting the bzImage"
		rm -f "$kroot.tmp/vmlinux"
	fi
	mv "$kroot.tmp" "$kroot"
	touch "$kroot/.done"
fi
kimage=$kroot/vmlinux
[ -e "$kimage" ] || kimage=$kroot/boot/vmlinuz-$kver

# The initramfs: static busybox, ci/rxe/init, the modules needed to mount
# the 9p root (in load order).  The RDMA modules are loaded later, in the
# guest, by modprobe -d from the cache folder.
initmods=(virtio_ring virtio virtio_pci_modern_dev virtio_pci_legacy_dev virtio_pci
	virtio_mmio 9pnet 9pnet_virtio netfs fscache 9p)
ikey=$( { cat "$here/init"; echo "${initmods[*]}"; cksum <"$busybox"; echo "$kver"; } | cksum | cut -d' ' -f1)
initrd=$cache/kernel/initramfs-$kver-$ikey.cpio
if [ ! -e "$initrd" ]; then
	say "building $(basename "$initrd")"
	stage=$(mktemp -d "$cache/initramfs.XXXXXX")
	mkdir -p "$stage/bin" "$stage/modules"
	cp "$busybox" "$stage/bin/busybox"
	cp "$here/init" "$stage/init"
	chmod 755 "$stage/init"
	: >"$stage/modules.list"
	for m in "${initmods[@]}"; do
		f=$(find "$kroot/lib/modules/$kver/kernel" -name "$m.ko" -o -name "$m.ko.xz" -o -name "$m.ko.zst" | head -1)
		if [ -z "$f" ]; then
			grep -q "/$m.ko" "$kroot/lib/modules/$kver/modules.builtin" ||
				die "module $m is neither a module nor built into $kver"
			continue
		fi
		case "$f" in
		*.xz) xz -dc "$f" >"$stage/modules/$m.ko" ;;
		*.zst) zstd -qdc "$f" >"$stage/modules/$m.ko" ;;
		*) cp "$f" "$stage/modules/$m.ko" ;;
		esac
		echo "$m" >>"$stage/modules.list"
	done
	(cd "$stage" && find . | cpio -o -H newc --quiet >"$initrd.tmp") || die "cpio failed"
	mv "$initrd.tmp" "$initrd"
	rm -rf "$stage"
	find "$cache/kernel" -maxdepth 1 -name 'initramfs-*.cpio' ! -name "$(basename "$initrd")" -delete
fi
flock -u 9

if [ "$prepare_only" = 1 ]; then
	say "prepared in $(elapsed)s: kernel $kimage, initramfs $initrd"
	exit 0
fi

# ------------------------------------------------------------------ the run
cwd=$(pwd -P)
ctl=$(mktemp -d "$cache/run/vm.XXXXXX")
qpid='' wpid='' mpid=''
# shellcheck disable=SC2317 # (called by the trap)
cleanup() {
	local rc=$?
	[ -n "$wpid" ] && kill "$wpid" 2>/dev/null
	[ -n "$mpid" ] && kill "$mpid" 2>/dev/null
	[ -n "$qpid" ] && kill "$qpid" 2>/dev/null && wait "$qpid" 2>/dev/null
	if [ "$keep" = 1 ]; then
		say "kept the control folder $ctl"
	else
		rm -rf "$ctl"
	fi
	return "$rc"
}
trap cleanup EXIT
trap 'say "interrupted"; exit 130' INT TERM HUP

# Shares: at the same path in the guest.  cwd must be visible there.
fsdevs=() sharecfg=()
i=0
for s in "${shares[@]}"; do
	mkdir -p "$s" || die "cannot create share $s"
	s=$(cd "$s" && pwd -P)
	[[ "$s" =~ [,] ]] && die "share paths must not contain commas: $s"
	fsdevs+=(-fsdev "local,id=sh$i,path=$s,security_model=none,multidevs=remap"
		-device "virtio-9p-pci,fsdev=sh$i,mount_tag=sh$i")
	sharecfg+=("sh$i=$s")
	i=$((i + 1))
done
case "$cwd/" in
/tmp/*)
	inshare=0
	for s in "${sharecfg[@]}"; do
		case "$cwd/" in "${s#*=}"/*) inshare=1 ;; esac
	done
	[ "$inshare" = 1 ] || die "the current directory $cwd is under /tmp, which the VM cannot see (cd elsewhere or --share it)"
	;;
esac

# Control folder: what guest.sh needs, and where it reports.
cp "$here/guest.sh" "$here/net.sh" "$ctl/"
printf '#!/bin/sh\nexec /sbin/modprobe -d %s "$@"\n' "$kroot" >"$ctl/modprobe"
chmod 755 "$ctl/modprobe"
{
	printf 'RXE_KROOT=%q\nRXE_KVER=%q\nRXE_DEVICES=%q\nRXE_CWD=%q\nRXE_DEBUG=%q\n' \
		"$kroot" "$kver" "$devices" "$cwd" "${RXE_DEBUG:-0}"
	printf 'RXE_SHARES=('
	for s in "${sharecfg[@]}"; do printf '%q ' "$s"; done
	printf ')\n'
} >"$ctl/config"
printf '%s\0' "$@" >"$ctl/argv"
{
	while IFS= read -r v; do
		case "$v" in RXE_MODE | RXE_CACHE_DIR | RXE_ACCEL | RXE_KERNEL_PKG | RXE_KERNEL_ARGS | RXE_DEBUG) continue ;; esac
		printf 'export %s=%q\n' "$v" "${!v}"
	done < <(compgen -e | grep -E '^(TV_|RDMA_|RXE_|CTEST_)' || true)
	for v in "${envs[@]}"; do
		[ -n "${!v+x}" ] && printf 'export %s=%q\n' "$v" "${!v}"
	done
} >"$ctl/env"

accel=${RXE_ACCEL:-}
if [ -z "$accel" ]; then
	accel=tcg
	if grep -qwE 'vmx|svm' /proc/cpuinfo && [ -w /dev/kvm ] &&
		{ [ -d /sys/module/kvm_intel ] || [ -d /sys/module/kvm_amd ]; }; then
		accel=kvm
	fi
fi
case "$accel" in
kvm) cpu=host ;;
tcg) cpu=max ;;
*) die "RXE_ACCEL must be kvm or tcg" ;;
esac

append="console=ttyS0 panic=-1 oops=panic sysrq_always_enabled rdinit=/init"
append+=" 8250.nr_uarts=1 mitigations=off random.trust_cpu=on"
# TCG's TSC follows the host clock: use it rather than the HPET, whose every
# read is an emulated MMIO access (and makes perftest's clock calibration fail).
[ "$accel" = tcg ] && append+=" tsc=reliable"
append+=" ${RXE_KERNEL_ARGS:-}"
if [ "${RXE_DEBUG:-0}" = 1 ]; then
	append+=" rxe.debug=1 ignore_loglevel"
else
	append+=" quiet loglevel=3"
fi

# The monitor on a pair of FIFOs, so the watchdog can ask the guest kernel
# for blocked-task and CPU backtraces before it kills a hung VM.
mkfifo "$ctl/monitor.in" "$ctl/monitor.out"

say "booting $kpkg ($accel, $smp vCPUs, ${mem} MiB, $devices rxe device(s)); running: $*"
timeout -k 10 "$((timeout + 30))" qemu-system-x86_64 \
	-accel "$accel" -cpu "$cpu" -M pc -smp "$smp" -m "$mem" \
	-name tv-rxe,debug-threads=on \
	-nic none -no-reboot -display none -vga none \
	-chardev "stdio,id=con,logfile=$ctl/console.log" -serial chardev:con \
	-chardev "pipe,id=mon,path=$ctl/monitor" -mon chardev=mon,mode=readline \
	-kernel "$kimage" -initrd "$initrd" -append "$append" \
	-fsdev local,id=root,path=/,security_model=none,multidevs=remap,readonly=on \
	-device virtio-9p-pci,fsdev=root,mount_tag=root \
	-fsdev "local,id=ctl,path=$ctl,security_model=none,multidevs=remap" \
	-device virtio-9p-pci,fsdev=ctl,mount_tag=ctl \
	"${fsdevs[@]}" </dev/null &
qpid=$!
cat "$ctl/monitor.out" >"$ctl/monitor.log" 2>/dev/null &
mpid=$!
# --pin: qemu names its vCPU threads "CPU k/TCG" (debug-threads=on).
if [ "$pin" = 1 ]; then
	(
		for ((i = 0; i < 50; i++)); do
			sleep 0.1
			q=$(pgrep -P "$qpid" qemu-system-x86) || continue
			n=0
			for t in /proc/"${q%%$'\n'*}"/task/*; do
				c=$(cat "$t/comm" 2>/dev/null) || continue
				[[ "$c" =~ ^CPU\ ([0-9]+)/TCG$ ]] || continue
				taskset -p -c "$((BASH_REMATCH[1] % $(nproc)))" "${t##*/}" >/dev/null &&
					n=$((n + 1))
			done
			[ "$n" -ge "$smp" ] && exit 0
		done
		say "warning: --pin: the vCPU threads were not found; not pinned"
	) &
fi

# Watchdog: at the timeout, dump the guest's blocked tasks and CPU
# backtraces to the console (sysrq 9 = console loglevel 9, w, l), then stop.
(
	for ((s = 0; s < timeout; s++)); do
		sleep 1
		kill -0 "$qpid" 2>/dev/null || exit 0
	done
	touch "$ctl/timed-out"
	for k in alt-sysrq-9 alt-sysrq-w alt-sysrq-l; do
		echo "sendkey $k" >"$ctl/monitor.in"
		sleep 1
	done
	sleep 2
	echo quit >"$ctl/monitor.in"
) 2>/dev/null &
wpid=$!

qrc=0
wait "$qpid" || qrc=$?
qpid=
kill "$wpid" 2>/dev/null || true
wait "$wpid" 2>/dev/null || true
wpid=
kill "$mpid" 2>/dev/null || true
mpid=

boot=$(cat "$ctl/started" 2>/dev/null || echo '?')
if [ -e "$ctl/status" ]; then
	rc=$(cat "$ctl/status")
	say "command exited $rc (command started ${boot}s after boot; VM total $(elapsed)s)"
	exit "$rc"
fi
if [ -e "$ctl/boot-error" ]; then
	die "the VM failed to boot: $(cat "$ctl/boot-error") (console: $ctl/console.log with --keep)"
fi
if [ -e "$ctl/setup-error" ]; then
	die "the VM booted but its setup failed: $(cat "$ctl/setup-error")"
fi
if [ -e "$ctl/timed-out" ] || [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	if [ -e "$ctl/started" ]; then
		say "error: the command timed out after ${timeout}s (guest task dump above; VM total $(elapsed)s)"
		exit 124
	fi
	die "the VM timed out after ${timeout}s before the command started (boot hang; rerun with RXE_DEBUG=1 --keep)"
fi
if [ -e "$ctl/started" ]; then
	die "the VM died while the command ran (qemu exit $qrc; a guest kernel panic/oops ends it: see the console above)"
fi
die "the VM failed to boot (qemu exit $qrc; rerun with RXE_DEBUG=1 to see the kernel log)"
