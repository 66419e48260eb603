#!/usr/bin/env bash
# Installs tsfiled as a systemd service from a source checkout.
#
#   sudo ops/install.sh                       # builds with `cargo install --path daemon`
#   sudo ops/install.sh --binary target/release/tsfiled
#   DESTDIR=/tmp/stage ops/install.sh --binary ...   # stage for packaging: no user, no systemctl
#
# Puts in place:
#   $PREFIX/bin/tsfiled                         the binary (PREFIX defaults to /usr)
#   /etc/systemd/system/tsfiled.service         the unit (ExecStart follows PREFIX)
#   /etc/tsfiled/tsfiled.toml                   the commented embedded default, data in
#                                               /var/lib/tsfiled; an existing file is kept and
#                                               the new one written next to it as .dist
#   /usr/lib/sysusers.d/tsfiled.conf            the `tsfiled` system user, for systemd-sysusers
#   /var/lib/tsfiled                            state directory (data, WAL), mode 0750
#   $PREFIX/share/doc/tsfiled/                  configuration reference and example configs
#   $PREFIX/share/tsfiled/{prometheus,grafana}  the monitoring kit
# and, unless DESTDIR is set, creates the `tsfiled` user and group and runs
# `systemctl daemon-reload`. It never enables or starts the service.
set -euo pipefail

usage() {
  sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
  echo
  echo "Options: --binary PATH  --prefix DIR  --unit-dir DIR  --no-user  -h|--help"
}

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DESTDIR=${DESTDIR:-}
PREFIX=${PREFIX:-/usr}
UNIT_DIR=/etc/systemd/system
BINARY=""
CREATE_USER=1

while [ $# -gt 0 ]; do
  case "$1" in
    --binary) BINARY=${2:?--binary needs a path}; shift 2 ;;
    --prefix) PREFIX=${2:?--prefix needs a directory}; shift 2 ;;
    --unit-dir) UNIT_DIR=${2:?--unit-dir needs a directory}; shift 2 ;;
    --no-user) CREATE_USER=0; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "install.sh: unknown argument: $1" >&2; usage >&2; exit 2 ;;
  esac
done

case "$PREFIX" in
  /*) ;;
  *) echo "install.sh: --prefix must be absolute: $PREFIX" >&2; exit 2 ;;
esac

if [ -z "$DESTDIR" ] && [ "$(id -u)" -ne 0 ]; then
  echo "install.sh: run as root (or set DESTDIR to stage the files)" >&2
  exit 1
fi

say() { echo "install.sh: $*"; }

# 1. The binary.
if [ -z "$BINARY" ]; then
  command -v cargo >/dev/null || { echo "install.sh: cargo not found; pass --binary PATH" >&2; exit 1; }
  BUILD_ROOT=$(mktemp -d)
  trap 'rm -rf "$BUILD_ROOT"' EXIT
  say "building: cargo install --locked --path daemon --bin tsfiled"
  cargo install --locked --path "$SRC/daemon" --bin tsfiled --root "$BUILD_ROOT"
  BINARY=$BUILD_ROOT/bin/tsfiled
fi
if [ ! -f "$BINARY" ] || [ ! -x "$BINARY" ]; then
  echo "install.sh: not an executable file: $BINARY" >&2
  exit 1
fi
install -D -m 0755 "$BINARY" "$DESTDIR$PREFIX/bin/tsfiled"
say "installed $DESTDIR$PREFIX/bin/tsfiled"

# 2. The unit, with ExecStart pointing at the installed binary.
unit_src=$SRC/systemd/tsfiled.service
grep -q '^ExecStart=/usr/bin/tsfiled ' "$unit_src" || {
  echo "install.sh: $unit_src: no 'ExecStart=/usr/bin/tsfiled ' line to adjust" >&2
  exit 1
}
install -d -m 0755 "$DESTDIR$UNIT_DIR"
sed "s#^ExecStart=/usr/bin/tsfiled #ExecStart=$PREFIX/bin/tsfiled #" "$unit_src" \
  > "$DESTDIR$UNIT_DIR/tsfiled.service"
chmod 0644 "$DESTDIR$UNIT_DIR/tsfiled.service"
say "installed $DESTDIR$UNIT_DIR/tsfiled.service"

# 3. The configuration: the embedded default (config/src/default.rs), comments and all.
default_rs=$SRC/config/src/default.rs
config_text=$(awk '
  /DEFAULT_CONFIG: &str = r#"/ { on = 1; sub(/.*r#"/, "") }
  on && /^"#;/ { exit }
  on { print }
' "$default_rs")
if ! printf '%s\n' "$config_text" | grep -q '^\[\[pipeline\]\]$' ||
  ! printf '%s\n' "$config_text" | grep -q '^data_dir = "./data"$'; then
  echo "install.sh: cannot extract DEFAULT_CONFIG from $default_rs" >&2
  exit 1
fi
install -d -m 0750 "$DESTDIR/etc/tsfiled"
config=$DESTDIR/etc/tsfiled/tsfiled.toml
target=$config
if [ -e "$config" ]; then
  target=$config.dist
  say "keeping the existing $config; the new default goes to $target"
fi
{
  echo "# Installed by ops/install.sh: the embedded default with data in /var/lib/tsfiled."
  echo "# Reference of every key: $PREFIX/share/doc/tsfiled/configuration.md"
  echo "# Validate changes with: tsfiled check-config /etc/tsfiled/tsfiled.toml"
  echo "# then apply them with: systemctl reload tsfiled"
  echo
  printf '%s\n' "$config_text" | sed 's#^data_dir = "./data"#data_dir = "/var/lib/tsfiled"#'
} > "$target"
chmod 0640 "$target"
say "installed $target"

# 4. The system user (sysusers.d for systemd-sysusers, and created right away).
install -d -m 0755 "$DESTDIR/usr/lib/sysusers.d"
cat > "$DESTDIR/usr/lib/sysusers.d/tsfiled.conf" <<'EOF'
# tsfiled: turns live data into Apache IoTDB TsFiles.
u tsfiled - "tsfiled daemon" /var/lib/tsfiled /usr/sbin/nologin
EOF
chmod 0644 "$DESTDIR/usr/lib/sysusers.d/tsfiled.conf"

# 5. State directory (systemd's StateDirectory= also creates it at start).
install -d -m 0750 "$DESTDIR/var/lib/tsfiled"

# 6. Documentation and the monitoring kit.
doc=$DESTDIR$PREFIX/share/doc/tsfiled
install -d -m 0755 "$doc/examples"
for f in README.md docs/configuration.md; do
  [ -f "$SRC/$f" ] && install -m 0644 "$SRC/$f" "$doc/"
done
install -m 0644 "$SRC"/config/examples/*.toml "$doc/examples/"
kit=$DESTDIR$PREFIX/share/tsfiled
install -d -m 0755 "$kit/prometheus" "$kit/grafana"
install -m 0644 "$SRC"/ops/prometheus/*.yml "$kit/prometheus/"
install -m 0644 "$SRC"/ops/grafana/*.json "$kit/grafana/"
say "installed documentation in $doc and the monitoring kit in $kit"

# 7. On the live system: the user, ownership, systemd.
if [ -z "$DESTDIR" ]; then
  if [ "$CREATE_USER" -eq 1 ]; then
    getent group tsfiled >/dev/null || groupadd --system tsfiled
    getent passwd tsfiled >/dev/null ||
      useradd --system --gid tsfiled --home-dir /var/lib/tsfiled --no-create-home \
        --shell /usr/sbin/nologin --comment "tsfiled daemon" tsfiled
    chown tsfiled:tsfiled /var/lib/tsfiled
    chown root:tsfiled /etc/tsfiled "$target"
    say "user and group tsfiled ready"
  fi
  if [ -d /run/systemd/system ]; then
    systemctl daemon-reload
  fi
  say "done. Start it with: systemctl enable --now tsfiled"
fi
