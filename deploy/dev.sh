#!/usr/bin/env bash
# One entry point for a fresh Debian machine: installs what opsbot needs, then runs the job.
#   bash deploy/dev.sh demo    sandbox up + diagnose the default incident (playbook when no LLM is set)
#   bash deploy/dev.sh check   ruff (lint + format) + mypy + pytest (the command CI runs)
# Any other arguments are passed to the `opsbot` CLI: bash deploy/dev.sh diagnose "why is order slow?"
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${OPSBOT_VENV:-.venv}

as_root() { if [ "$(id -u)" = 0 ]; then "$@"; else sudo "$@"; fi; }

ensure_apt() {
  local missing=()
  command -v prometheus >/dev/null && command -v promtool >/dev/null || missing+=(prometheus)
  command -v redis-server >/dev/null || missing+=(redis-server)
  command -v git >/dev/null || missing+=(git)
  python3 -c 'import ensurepip, venv' 2>/dev/null || missing+=(python3-venv)
  [ ${#missing[@]} -eq 0 ] && return
  echo "dev.sh: installing Debian packages: ${missing[*]}" >&2
  as_root env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

ensure_venv() {
  python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "dev.sh: Python 3.11+ is required" >&2; exit 1; }
  [ -x "$VENV/bin/python" ] || python3 -m venv "$VENV"
  local stamp="$VENV/.opsbot-installed" want
  want=$(sha256sum pyproject.toml | cut -d' ' -f1)
  if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
    echo "dev.sh: installing Python packages into $VENV" >&2
    "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
    "$VENV/bin/python" -m pip install -q -e '.[dev]'
    echo "$want" > "$stamp"
  fi
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

ensure_apt
ensure_venv
cmd=${1:-demo}
shift || true
case "$cmd" in
  check) check "$@" ;;
  *) exec "$VENV/bin/opsbot" "$cmd" "$@" ;;
esac
