#!/usr/bin/env bash
# install_consumer.sh BUILD_DIR WORK_DIR: installs the build into a
# temporary prefix (cmake --install --prefix), then builds examples/two_moons.c
# against that prefix both ways a C user would, with pkg-config (axon.pc) and
# with CMake's find_package(axon) (axonConfig.cmake), runs both programs, and
# checks that they ran on the installed libaxon.so, not the build tree's. Also
# moves the installed tree elsewhere and builds again: both files find the
# prefix from their own place; and (where Debian's python3 has NumPy) that the
# installed Python package imports and finds the installed libaxon. Skips (77)
# without pkg-config or a C compiler.
set -euo pipefail
build=$1
work=$2
source_dir=$(cd "$(dirname "$0")/.." && pwd)
command -v pkg-config >/dev/null || { echo "SKIPPED: pkg-config is not installed"; exit 77; }
command -v cc >/dev/null || { echo "SKIPPED: no C compiler (cc)"; exit 77; }
rm -rf "$work"
mkdir -p "$work"
prefix=$work/prefix
cmake --install "$build" --prefix "$prefix" >"$work/install.log"

fail() { echo "install_consumer: $*" >&2; exit 1; }
pc=$(find "$prefix" -name axon.pc)
config=$(find "$prefix" -name axonConfig.cmake)
[ -n "$pc" ] || fail "no axon.pc under $prefix"
[ -n "$config" ] || fail "no axonConfig.cmake under $prefix"
[ -f "$(dirname "$config")/axonConfigVersion.cmake" ] || fail "no axonConfigVersion.cmake beside $config"
[ -f "$prefix/include/axon.h" ] || fail "no include/axon.h under $prefix"

# The same program two ways; $1 names the prefix, $2 a folder for the builds.
build_both() {
    local p=$1 out=$2
    mkdir -p "$out"
    local pcdir
    pcdir=$(dirname "$(find "$p" -name axon.pc)")
    [ "$(PKG_CONFIG_PATH=$pcdir pkg-config --modversion axon)" = "$(sed -n 's/^#define AX_VERSION "\(.*\)"/\1/p' "$source_dir/include/axon.h")" ] \
        || fail "pkg-config --modversion axon is not AX_VERSION"
    local libdir
    libdir=$(PKG_CONFIG_PATH=$pcdir pkg-config --variable=libdir axon)
    # shellcheck disable=SC2046
    cc -std=c11 -Wall -Werror "$source_dir/examples/two_moons.c" \
        $(PKG_CONFIG_PATH=$pcdir pkg-config --cflags --libs axon) -lm -Wl,-rpath,"$libdir" \
        -o "$out/two_moons_pkgconfig"
    cmake -S "$source_dir/examples" -B "$out/cmake" -DCMAKE_PREFIX_PATH="$p" \
        -DCMAKE_BUILD_TYPE=Release >"$out/cmake.log" 2>&1 || { cat "$out/cmake.log"; fail "find_package(axon) failed"; }
    cmake --build "$out/cmake" >"$out/build.log" 2>&1 || { cat "$out/build.log"; fail "the find_package build failed"; }
    for program in "$out/two_moons_pkgconfig" "$out/cmake/two_moons"; do
        local lib
        lib=$(ldd "$program" | awk '/libaxon\.so/ {print $3}')
        case "$lib" in
            "$p"/*) ;;
            *) fail "$program uses libaxon at '$lib', not the one installed under $p" ;;
        esac
        "$program" "$out/model.safetensors" || fail "$program failed"
    done
    # The Python package installed beside the library finds it there.
    if /usr/bin/python3 -c "import numpy" 2>/dev/null; then
        local found
        found=$(cd "$out" && env -u AXON_LIBRARY -u AXON_PREFIX PYTHONPATH="$p/lib/python3/dist-packages" \
                /usr/bin/python3 -c "import axon; print(axon.library_path)")
        case "$found" in
            "$p"/*) echo "install_consumer: import axon from $p found $found" ;;
            *) fail "the installed Python package found libaxon at '$found', not under $p" ;;
        esac
    fi
}
build_both "$prefix" "$work/first"
mv "$prefix" "$work/moved"
build_both "$work/moved" "$work/second"
echo "install_consumer: installed, built with pkg-config and find_package, ran both (also after moving the prefix)"
