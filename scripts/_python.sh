# Sourced by the set-up scripts: pick_python VERSION... prints the first interpreter that really runs.
# A pyenv shim is on PATH for every installed version but fails unless that version is selected,
# so each candidate is run once; pyenv's own versions folder is the fallback.
pick_python() {
  local v cand
  for v in "$@"; do
    for cand in "python$v" "${PYENV_ROOT:-$HOME/.pyenv}"/versions/"$v".*/bin/"python$v"; do
      if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import sys' >/dev/null 2>&1; then
        command -v "$cand"
        return 0
      fi
    done
  done
  return 1
}
