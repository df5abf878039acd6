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

# The browser's own process: the child of the pane's shell.
pid=""
find_pid() {
  local pane c
  pane=$(T list-panes -t tui -F '#{pane_pid}' 2> /dev/null) || return 1
  for c in $(cat "/proc/$pane/task/$pane/children" 2> /dev/null); do
    [[ $(cat "/proc/$c/comm" 2> /dev/null) == scope-profiler ]] && { pid=$c; return 0; }
  done
  return 1
}
# Its voluntary context switches: one more each time it blocks.
switches() { sed -n 's/^voluntary_ctxt_switches:[[:space:]]*//p' "/proc/$pid/status" 2> /dev/null; }

# idle SINCE: waits until the browser has blocked again after SINCE switches
# and sleeps in its terminal read (getch() has no timeout; the kernel says
# wait_woken, or nothing where wchan is hidden), i.e. it has taken in what
# was typed and drawn the result, or has exited; however slow the build
# (ASan) or loaded the machine: 5 minutes at most. A fixed pause instead
# would race a slow redraw.
idle() {
  local since=$1 i n st w
  for ((i = 0; i < 15000; i++)); do
    [[ -n $pid && -d /proc/$pid ]] || return 0
    n=$(switches)
    read -r _ _ st _ < "/proc/$pid/stat" 2> /dev/null || return 0
    [[ $st == Z ]] && return 0
    w=$(cat "/proc/$pid/wchan" 2> /dev/null)
    [[ -n $n && $n -gt $since && $st == S && ($w == wait_woken || $w == n_tty_read || $w == 0 || -z $w) ]] &&
      return 0
    sleep 0.02
  done
}

# The screen once tmux has it all: two equal captures 150 ms apart (after
# idle, only tmux's own reading of the terminal is left to wait for).
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
  for _ in $(seq 1 3000); do
    find_pid && break
    sleep 0.1
  done
  idle 0 # its first wait for a key: the file is read and the screen drawn
  for _ in $(seq 1 100); do
    T capture-pane -p -t tui 2>/dev/null | grep -q "q quit" && break
    sleep 0.1
  done
  settle
}

# keys KEY...: send tmux key names (Down, Enter, Escape, a literal) one by
# one, each taken in and drawn before the next is sent.
keys() {
  local k n
  for k in "$@"; do
    n=$(switches)
    T send-keys -t tui "$k"
    idle "${n:-0}"
    settle
  done
}

# screen TITLE: print the screen, trailing blanks trimmed.
screen() {
  echo "=== $1"
  T capture-pane -p -t tui | sed -e 's/[[:space:]]*$//'
}
