# Shell quoting shared by scripts/launch_tpu.sh and scripts/cache_tasks.sh (sourced, not run).
# Their --dry-run output must paste back into bash as the same words.

# One argument as bash reads it back: bare when it holds only safe characters, else in
# single quotes, each ' inside written as '\'' (close, escaped quote, reopen).
quote_arg() {
  if [[ "$1" =~ ^[A-Za-z0-9_./:=@%+,-]+$ ]]; then
    printf '%s' "$1"
  else
    local squote="'"
    printf "'%s'" "${1//${squote}/${squote}\\${squote}${squote}}"
  fi
}

# A whole command line, each argument quoted by quote_arg, separated by single spaces.
quote_command() {
  local arg line=""
  for arg in "$@"; do
    line+="$(quote_arg "${arg}") "
  done
  printf '%s\n' "${line% }"
}
