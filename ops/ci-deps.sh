#!/usr/bin/env bash
# Installs the system tools the operations tests use (tests/ops_kit.rs):
# promtool (Debian's `prometheus`), headless Chromium, systemd-analyze (`systemd`),
# and what the MQTT broker tests use: mosquitto (with mosquitto_passwd), mosquitto-clients
# (mosquitto_pub) and openssl; curl runs the README's Quick start (tests/e2e/quick_start.rs).
# For .ci/run and fresh machines; needs root. Does not start any service.
set -euo pipefail
need=()
command -v promtool >/dev/null || need+=(prometheus)
command -v chromium >/dev/null || need+=(chromium)
command -v systemd-analyze >/dev/null || need+=(systemd)
command -v mosquitto >/dev/null || [ -x /usr/sbin/mosquitto ] || need+=(mosquitto)
command -v openssl >/dev/null || need+=(openssl)
command -v mosquitto_pub >/dev/null || need+=(mosquitto-clients)
command -v curl >/dev/null || need+=(curl)
if [ ${#need[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q
  # policy-rc.d 101: keep the prometheus package from starting its service.
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    trap 'rm -f /usr/sbin/policy-rc.d' EXIT
  fi
  apt-get install -y -q --no-install-recommends "${need[@]}"
fi
