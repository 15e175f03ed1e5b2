# cli_check.sh: what the CLI test scripts share, sourced by them.
#   cli_check_begin SCRIPT "$@": takes the script's two arguments, /path/to/axon and
#   WORKDIR (AXON made absolute, WORKDIR emptied and entered), or prints the usage
#   and exits 2; then failures counts fail's, ok says a passed check, and
#   run COMMAND... leaves its status in rc, its stdout in out.txt, its stderr in err.txt.
#   refuse_keeping_picture NAME STATUS TEXT... -- COMMAND... (axon plot's tests):
#   COMMAND exits STATUS with every TEXT in its stderr, keep.png (an earlier
#   picture) stays as it was, and nothing matches the glob in $plot_temporaries.

cli_check_begin() {
    local script=$1
    shift
    if [ $# -ne 2 ]; then
        echo "usage: bash tests/$script /path/to/axon WORKDIR" >&2
        exit 2
    fi
    AXON=$1
    WORK=$2
    case "$AXON" in /*) ;; *) AXON="$PWD/$AXON" ;; esac
    rm -rf "$WORK"
    mkdir -p "$WORK" && cd "$WORK" || exit 1
    failures=0
}

fail() { echo "FAIL: $*"; failures=$((failures + 1)); }
ok() { echo "ok    $*"; }
run() { "$@" > out.txt 2> err.txt; rc=$?; }

refuse_keeping_picture() {
    local name=$1 status=$2 texts=()
    shift 2
    while [ "$1" != "--" ]; do texts+=("$1"); shift; done
    shift
    printf 'an earlier picture\n' > keep.png
    run "$@"
    local problems=""
    [ "$rc" -eq "$status" ] || problems="$problems exit status $rc, expected $status;"
    for text in "${texts[@]}"; do
        grep -qF -- "$text" err.txt || problems="$problems stderr lacks '$text';"
    done
    [ "$(cat keep.png)" = "an earlier picture" ] || problems="$problems keep.png was changed;"
    # shellcheck disable=SC2086 # the glob is meant to expand
    ls $plot_temporaries > /dev/null 2>&1 && problems="$problems a temporary folder was left;"
    if [ -n "$problems" ]; then fail "$name:$problems $(head -c 400 err.txt)"; else ok "$name"; fi
}
