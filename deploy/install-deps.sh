#!/usr/bin/env bash
# Installs everything syncgate's build, tests and sandbox need on Debian 12.
# Idempotent: safe to run again; does nothing when all is present.
set -euo pipefail
pkgs=(
  build-essential pkg-config meson ninja-build clang lld llvm libclang-rt-14-dev
  libevent-dev libssl-dev libyaml-dev librdkafka-dev libcriterion-dev libjansson-dev
  openjdk-17-jre-headless maven kcat
  python3-confluent-kafka python3-kafka python3-yaml python3-pytest python3-pytest-timeout python3-pytest-xdist python3-venv
  prometheus iproute2 procps curl openssl yamllint
)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO=sudo
  $SUDO apt-get update -q
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
