#!/usr/bin/env bash
# Install what tensorverbs needs to build and test, from Debian's packages.
# Idempotent: when everything is there already it does not touch apt.
set -euo pipefail

pkgs=(build-essential cmake pkg-config check libsubunit-dev libjansson-dev
      libprotobuf-c-dev protobuf-c-compiler libxxhash-dev libfiu-dev lcov libxml2-utils jq
      openmpi-bin libopenmpi-dev
      libibverbs-dev librdmacm-dev ibverbs-providers)
pkgs+=("$@")

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
		missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
	exit 0
fi
echo "install-deps: installing ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
	echo "install-deps: need root (apt-get) for: ${missing[*]}" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
