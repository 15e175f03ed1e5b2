# test_python.sh: sourced by the shell tests that run Python (their float64
# references, data writers, model comparisons), so that all of them find it
# as python_tests does and say the same thing where it is not there.
#   PYTHON      $AXON_TEST_PYTHON if set (a machine whose system Python lacks
#               NumPy: point it at one that has it), else Debian's
#               /usr/bin/python3, where scripts/setup.sh installs NumPy.
#   need_python MODULE...   exits 77 (CTest's skip), naming the interpreter
#               and the modules it lacks, unless it has them all.
#   has_python MODULE...    whether it has them (for optional checks).
PYTHON=${AXON_TEST_PYTHON:-/usr/bin/python3}

has_python() {
    [ -x "$PYTHON" ] || command -v "$PYTHON" > /dev/null 2>&1 || return 1
    local module
    for module in "$@"; do
        "$PYTHON" -c "import $module" 2> /dev/null || return 1
    done
}

need_python() {
    if ! [ -x "$PYTHON" ] && ! command -v "$PYTHON" > /dev/null 2>&1; then
        echo "SKIPPED: $(basename "$0") needs Python with $*; $PYTHON is not there" \
             "(set AXON_TEST_PYTHON to a python3 that has them)"
        exit 77
    fi
    local module missing=()
    for module in "$@"; do
        "$PYTHON" -c "import $module" 2> /dev/null || missing+=("$module")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "SKIPPED: $(basename "$0") needs ${missing[*]} in $PYTHON, which lacks it" \
             "(apt-get install python3-numpy, or set AXON_TEST_PYTHON to a python3 that has it)"
        exit 77
    fi
}
