# common.bash - drive `scope-profiler tui` in a real pseudo-terminal: tmux
# runs it in a detached session of a fixed size, send-keys types, and
# capture-pane prints the screen as text (the golden screens). Skips (77)
# when tmux is missing (scripts/install-deps.sh installs it).
command -v tmux >/dev/null || { echo "skip: tmux missing"; exit 77; }
export LANG=C.UTF-8 LC_ALL=C.UTF-8
unset TMUX
sock="tui-$$"
T() { tmux -L "$sock" "$@"; }
trap 'T kill-server 2>/dev/null' EXIT

# The screen once it has stopped changing (two equal captures 150 ms apart).
settle() {
  local prev="" cur i
  for i in $(seq 1 60); do
    cur=$(T capture-pane -p -t tui 2>/dev/null)
    [[ -n "$cur" && "$cur" == "$prev" ]] && return 0
    prev=$cur
    sleep 0.15
  done
}

# start COLS ROWS ARGS...: the browser on ARGS; waits for the first screen.
start() {
  local cols=$1 rows=$2
  shift 2
  T -u new-session -d -s tui -x "$cols" -y "$rows" "$SP tui $*; sleep 30"
  for _ in $(seq 1 100); do
    T capture-pane -p -t tui 2>/dev/null | grep -q "q quit" && break
    sleep 0.1
  done
  settle
}

# keys KEY...: send tmux key names (Down, Enter, Escape, a literal) one by one.
keys() {
  local k
  for k in "$@"; do
    T send-keys -t tui "$k"
    settle
  done
}

# screen TITLE: print the screen, trailing blanks trimmed.
screen() {
  echo "=== $1"
  T capture-pane -p -t tui | sed -e 's/[[:space:]]*$//'
}
