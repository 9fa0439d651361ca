# Shared by scripts/demo and scripts/test: make a fresh Debian machine able to run govern.
# Sourced, not run. Idempotent: a machine that has everything is left alone.

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${GOVERN_VENV:-$REPO/.venv}

say() { printf '==> %s\n' "$*" >&2; }

# ensure_packages PKG...: install the Debian packages that are missing (needs root).
ensure_packages() {
  local missing=() pkg
  for pkg in "$@"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  if [ "$(id -u)" -ne 0 ]; then
    echo "missing Debian packages: ${missing[*]} (run as root, or install them first)" >&2
    return 2
  fi
  say "installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# ensure_python: a python3 (3.11+) that can make virtual environments.
ensure_python() {
  if command -v python3 >/dev/null 2>&1 && python3 -c 'import sys, venv, ensurepip; assert sys.version_info >= (3, 11)' 2>/dev/null; then
    return 0
  fi
  ensure_packages python3 python3-venv python3-pip
}

# ensure_venv [EXTRA]: .venv with govern installed (editable), reinstalled when metadata changes.
ensure_venv() {
  local extra=${1:-} stamp want
  ensure_python
  [ -x "$VENV/bin/python" ] || { say "creating $VENV"; python3 -m venv "$VENV"; }
  want=$(cat "$REPO/setup.cfg" "$REPO/pyproject.toml" "$REPO/setup.py" | sha256sum | cut -c1-16)-$extra
  stamp="$VENV/.govern-installed"
  if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    say "installing govern${extra:+[$extra]} into $VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
    "$VENV/bin/python" -m pip install -q -e "$REPO${extra:+[$extra]}"
    echo "$want" > "$stamp"
  fi
}

# ensure_native: (re)build the native digest core into govern/ when cargo is there.
# The editable install builds it once; this keeps it current with native/ (cargo only
# recompiles what changed). Same features and profile as setup.py. Without cargo,
# govern runs its pure-Python engine.
ensure_native() {
  if ! command -v cargo >/dev/null 2>&1; then
    say "cargo not found: the native digest core is not built (pure-Python engine)"
    return 0
  fi
  local suffix
  suffix=$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
  cargo build --quiet --release --features python --manifest-path "$REPO/native/Cargo.toml"
  cmp -s "$REPO/native/target/release/libgovern_native.so" "$REPO/govern/_native$suffix" \
    || cp "$REPO/native/target/release/libgovern_native.so" "$REPO/govern/_native$suffix"
}
