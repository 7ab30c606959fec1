#!/usr/bin/env bash
# Install into a scratch prefix and build a program against tensorverbs.pc:
# the installed headers, library and pkg-config file are usable as shipped.
set -euo pipefail
build=$1
cc=${2:-cc}
extra=${3:-}
prefix=$(mktemp -d "$build/install-smoke.XXXXXX")
trap 'rm -rf "$prefix"' EXIT

cmake --install "$build" --prefix "$prefix" >/dev/null
pc=$(dirname "$(find "$prefix" -name tensorverbs.pc | head -n 1)")
cat >"$prefix/use.c" <<'C'
#include <tensorverbs/engine.h>
#include <tensorverbs/sim.h>

int main(void)
{
	struct tv_sim_config sc;
	struct tv_engine_config ec;
	struct tv_sim *sim;
	struct tv_engine *e;

	tv_sim_config_default(&sc);
	sc.num_nodes = 2;
	if (tv_sim_create(&sc, &sim))
		return 1;
	tv_engine_config_default(&ec);
	if (tv_engine_create(tv_sim_device(sim, 0), &ec, &e))
		return 2;
	if (tv_engine_destroy(e))
		return 3;
	return tv_sim_destroy(sim) ? 4 : 0;
}
C
# shellcheck disable=SC2046,SC2086
"$cc" -std=c11 -Wall -Werror $extra "$prefix/use.c" -o "$prefix/use" \
	$(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs tensorverbs)
LD_LIBRARY_PATH=$(dirname "$(find "$prefix" -name 'libtensorverbs.so' | head -n 1)") \
	"$prefix/use"
"$prefix/bin/tensorverbs" --help >/dev/null
echo "install smoke: ok"
