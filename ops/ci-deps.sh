#!/usr/bin/env bash
# Installs the system tools the operations tests use (tests/ops_kit.rs):
# promtool (Debian's `prometheus`), headless Chromium, systemd-analyze (`systemd`),
# what the MQTT broker tests use: mosquitto (with mosquitto_passwd), mosquitto-clients
# (mosquitto_pub) and openssl; curl runs the README's Quick start (tests/e2e/quick_start.rs);
# nats-server (JetStream) for the NATS source tests (connectors/tests/nats.rs); and the PyPI
# `tsfile` library (TsFile v4 tests) and `pymodbus` (the Modbus TCP simulator of
# connectors/tests/modbus.rs).
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
command -v nats-server >/dev/null || [ -x /usr/sbin/nats-server ] || need+=(nats-server)
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

# The PyPI `tsfile` library (Apache TsFile's C++ reader/writer, format v4): the oracle of
# format/tests/v4_pytsfile.rs and v4_table.rs. Pinned; installed for the `python3` on PATH (numpy comes with it).
# The PyPI `pymodbus` (its Modbus TCP server simulator): the device of connectors/tests/modbus.rs.
TSFILE_PY_VERSION=2.5.0
PYMODBUS_VERSION=3.16.1
pip_need() {
  ! python3 -c "import importlib.metadata as m, sys; sys.exit(m.version('$1') != '$2')" 2>/dev/null
}
for spec in "tsfile==$TSFILE_PY_VERSION" "pymodbus==$PYMODBUS_VERSION"; do
  if pip_need "${spec%%==*}" "${spec##*==}"; then
    if ! command -v python3 >/dev/null || ! python3 -m pip --version >/dev/null 2>&1; then
      export DEBIAN_FRONTEND=noninteractive
      apt-get update -q
      apt-get install -y -q --no-install-recommends python3 python3-pip
    fi
    # Debian's own python3 refuses global installs unless told (PEP 668); pyenv's does not.
    python3 -m pip install -q "$spec" \
      || python3 -m pip install -q --break-system-packages "$spec"
  fi
done
