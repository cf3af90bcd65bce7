# Completes one command line in an interactive zsh driven through a pseudo-terminal (zpty):
#   zsh zsh_complete.zsh COMPLETION_DIR 'dumpctl vac' DUMP_FILE
# prints "COMPLETED: " and the line after Tab. compinit loads _dumpctl from COMPLETION_DIR and keeps
# its function index in DUMP_FILE (made on the first call: a fresh file per test run, so that later
# calls skip the scan of every completion function, 1.4 s). Nothing of the user's configuration is
# read (zsh -f).
zmodload zsh/zpty || exit 2
compdir=$1 input=$2 dump=$3
zpty -b z "env -i HOME=${TMPDIR:-/tmp} TERM=dumb PATH=$PATH zsh -f -i" || exit 2
zpty -w z "fpath=(${(q)compdir} \$fpath); autoload -Uz compinit; compinit -u -C -d ${(q)dump}; PS1='>'"
# Keys are handled in order and completion is synchronous; zle does not redraw while keys wait, so
# the completed line is printed instead: Ctrl-A puts "print -r -- COMPLETED:" before it.
zpty -n -w z "$input"$'\t\C-aprint -r -- COMPLETED: \n'
# Bounded: 50 s (a first compinit on a loaded machine scans every completion function).
out= line=
SECONDS=0
while (( SECONDS < 50 )); do
  zpty -r -t z line && out+=$line || sleep 0.05
  [[ $out == *$'\n'COMPLETED:* ]] && break
done
zpty -d z
# The line print wrote: "COMPLETED: dumpctl vacuum".
print -r -- ${${(M)${(f)out}:#COMPLETED:*}%%$'\r'}
