#!/usr/bin/env bash
# One entry point for a fresh Debian machine: installs what opsbot needs, then runs the job.
#   bash deploy/dev.sh demo        sandbox up + diagnose the default incident (playbook when no LLM is set)
#   bash deploy/dev.sh check       ruff (lint + format) + mypy + pytest (the command CI runs)
#   bash deploy/dev.sh lock        refresh deploy/lock/ from pyproject.toml (needs PyPI; `lock --upgrade` moves
#                                  every pin to the newest release, `lock --upgrade-package numpy` one of them)
#   bash deploy/dev.sh lockcheck   install the runtime lock into a throwaway venv, as deploy/Dockerfile does
# Any other arguments are passed to the `opsbot` CLI: bash deploy/dev.sh diagnose "why is order slow?"
#
# .venv is built from deploy/lock/ (exact versions, sha256 hashes, Python 3.11 on Linux): build.txt (pip and the
# build backend), dev.txt (the runtime set + the dev extra), runtime.txt (the runtime set alone, for the image).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${OPSBOT_VENV:-.venv}
LOCK=deploy/lock
UV_VERSION=0.13.8 # the resolver `lock` runs, from a throwaway venv

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

ensure_apt() {
  local missing=()
  command -v prometheus >/dev/null && command -v promtool >/dev/null || missing+=(prometheus)
  command -v redis-server >/dev/null || missing+=(redis-server)
  compgen -G '/usr/lib/postgresql/*/bin/initdb' >/dev/null || missing+=(postgresql) # the database toolset's tests
  command -v git >/dev/null || missing+=(git)
  python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
  [ ${#missing[@]} -eq 0 ] && return
  echo "dev.sh: installing Debian packages: ${missing[*]}" >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

ensure_python() {
  python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "dev.sh: Python 3.11+ is required" >&2; exit 1; }
  python3 -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))' \
    || echo "dev.sh: warning: deploy/lock/ is resolved for Python 3.11; $(python3 -V) may need other pins" >&2
}

# The venv follows the lock: when pyproject.toml or a lock file changes, it is rebuilt from nothing, so it holds
# exactly the locked set (nothing left over from an older lock).
ensure_venv() {
  ensure_python
  local stamp="$VENV/.opsbot-installed" want
  want=$(cat pyproject.toml "$LOCK/build.txt" "$LOCK/dev.txt" | sha256sum | cut -d' ' -f1)
  if [ -x "$VENV/bin/python" ] && [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ]; then
    return
  fi
  echo "dev.sh: installing the locked Python packages into a fresh $VENV" >&2
  python3 -m venv --clear "$VENV"
  "$VENV/bin/python" -m pip install -q --require-hashes -r "$LOCK/build.txt" # pip and the build backend first
  install_locked "$VENV" "$LOCK/dev.txt"
  "$VENV/bin/python" -m pip install -q --no-deps --no-build-isolation -e .
  consistent "$VENV" # opsbot's own requirements are met by the lock too
  echo "$want" > "$stamp"
}

# Installs a lock file (--require-hashes also refuses any dependency that is missing from it), then checks that the
# venv holds exactly its pins: none missing, none extra, none at another version. The installers (pip, setuptools)
# are left out of the comparison: a venv's own, or build.txt's, installed by hash all the same.
install_locked() {
  local venv=$1 set=$2
  "$venv/bin/python" -m pip install -q --require-hashes -r "$set"
  diff -u <(locked_pins "$set") <(installed_pins "$venv") >&2 \
    || { echo "dev.sh: $venv differs from $set (- locked, + installed)" >&2; exit 1; }
}

consistent() {
  local broken
  broken=$("$1/bin/python" -m pip check) || { echo "dev.sh: $1 has broken requirements: $broken" >&2; exit 1; }
}

normalised() { awk -F'==' '{ name = tolower($1); gsub(/[-_.]+/, "-", name); print name "==" $2 }'; }
not_compared() { grep -vE '^(pip|setuptools|opsbot)==' || true; }
locked_pins() { grep -hE '^[A-Za-z0-9]' "$1" | cut -d' ' -f1 | normalised | not_compared | sort; }
installed_pins() { "$1/bin/python" -m pip freeze --all --exclude-editable | normalised | not_compared | sort; }

lock() {
  ensure_python
  local tool
  tool=$(mktemp -d)
  trap "rm -rf '$tool'" EXIT
  python3 -m venv "$tool/venv"
  "$tool/venv/bin/python" -m pip install -q "uv==$UV_VERSION"
  local compile=("$tool/venv/bin/uv" pip compile --quiet --python-version 3.11 --python-platform linux
    --generate-hashes --custom-compile-command "bash deploy/dev.sh lock" "$@")
  mkdir -p "$LOCK"
  "${compile[@]}" pyproject.toml --extra dev -o "$LOCK/dev.txt"
  "${compile[@]}" pyproject.toml -c "$LOCK/dev.txt" -o "$LOCK/runtime.txt" # the same pins, fewer packages
  python3 -c 'import tomllib; print(*tomllib.load(open("pyproject.toml", "rb"))["build-system"]["requires"], "pip", sep="\n")' \
    | "${compile[@]}" - -o "$LOCK/build.txt"
  echo "dev.sh: refreshed $LOCK/ (git diff $LOCK shows what moved)" >&2
}

# What deploy/Dockerfile does, in a throwaway venv: the runtime set installs from the lock alone, holds no broken
# dependency, and opsbot starts and imports its runtime modules without any dev package.
lockcheck() {
  ensure_python
  local tmp
  tmp=$(mktemp -d)
  trap "rm -rf '$tmp'" EXIT
  python3 -m venv "$tmp/build"
  "$tmp/build/bin/python" -m pip install -q --require-hashes -r "$LOCK/build.txt"
  "$tmp/build/bin/python" -m pip wheel -q --no-deps --no-build-isolation -w "$tmp/wheels" .
  python3 -m venv "$tmp/runtime" # its own pip, as the image has the base image's
  install_locked "$tmp/runtime" "$LOCK/runtime.txt"
  "$tmp/runtime/bin/python" -m pip install -q --no-deps "$tmp"/wheels/opsbot-*.whl
  consistent "$tmp/runtime"
  (cd "$tmp" && runtime/bin/opsbot --help >/dev/null)
  (cd "$tmp" && runtime/bin/python -c 'import bot.wiring, numpy, prometheus_api_client, dotenv, tools.analysis.trends')
  echo "dev.sh: the runtime lock installs on a clean venv ($(grep -cE '^[a-z0-9]' "$LOCK/runtime.txt") packages)" >&2
}

check() {
  "$VENV/bin/ruff" check bot tools prompts tests
  "$VENV/bin/ruff" format --check bot tools prompts tests
  "$VENV/bin/mypy"
  set +e
  "$VENV/bin/python" -m pytest -q "$@"
  local rc=$?
  set -e
  [ $rc -eq 5 ] && { echo "dev.sh: pytest collected no tests" >&2; exit 1; }
  exit $rc
}

cmd=${1:-demo}
shift || true
case "$cmd" in
  lock) ensure_apt && lock "$@" ;;
  lockcheck) ensure_apt && lockcheck ;;
  check) ensure_apt && ensure_venv && check "$@" ;;
  *) ensure_apt && ensure_venv && exec "$VENV/bin/opsbot" "$cmd" "$@" ;;
esac
