#!/bin/bash
# output_targets.sh: axon train --out onto what is not a file it may replace,
# each refused before training (exit 1) with the cause, the thing left as it
# was and no file written: a folder, a Unix socket, a block device node (made
# with mknod in WORKDIR, skipped where that is not allowed), a cycle of
# symbolic links, a link into a missing folder, a name longer than the
# system takes. And a relative link in a subfolder is followed from its own
# folder: the model lands beside the link, which stays a link.
#
# usage: output_targets.sh AXON WORKDIR
set -u
axon=$1
work=$2
case "$axon" in /*) ;; *) axon="$PWD/$axon" ;; esac
rm -rf "$work"
mkdir -p "$work" || exit 1
cd "$work" || exit 1
fail() { echo "output_targets: FAIL: $*" >&2; exit 1; }
train=(train --data synth:linear --rows 200 --features 3 --layers 1 --loss mse --epochs 1 --quiet)

refuse() { # OUT KIND WORDS: KIND is stat's %F of OUT before and after
    local out=$1 kind=$2 words=$3
    local before
    before=$(find . -path ./out.txt -prune -o -path ./err.txt -prune -o -print | sort)
    "$axon" "${train[@]}" --out "$out" > out.txt 2> err.txt
    local status=$?
    [ "$status" = 1 ] || { cat err.txt; fail "--out $out: exit status $status, not 1"; }
    grep -qF -- "--out $out: $words" err.txt || { cat err.txt; fail "--out $out: the message does not say '$words'"; }
    [ "$(stat -c %F "$out" 2> /dev/null)" = "$kind" ] || fail "--out $out: no longer a $kind"
    [ "$(find . -path ./out.txt -prune -o -path ./err.txt -prune -o -print | sort)" = "$before" ] ||
        fail "--out $out: a file was left: $(ls -la)"
}

mkdir folder
refuse folder directory "is a folder; give a file name"
if /usr/bin/python3 -c "import socket; socket.socket(socket.AF_UNIX).bind('sock')" 2> /dev/null; then
    refuse sock socket "is a socket; axon writes only files, character devices and FIFOs"
else
    echo "socket case skipped: no /usr/bin/python3 to make a Unix socket"
fi
if mknod blk b 7 0 2> /dev/null; then
    refuse blk "block special file" "is a block device (a disk); axon writes only files"
else
    echo "block device case skipped: mknod is not allowed here"
fi
ln -s cycle_b cycle_a && ln -s cycle_a cycle_b
refuse cycle_a "symbolic link" "Too many levels of symbolic links"
ln -s nowhere/model.safetensors dangling
refuse dangling "symbolic link" "the folder nowhere (where its link points) does not exist"
long=$(printf 'x%.0s' $(seq 300))
"$axon" "${train[@]}" --out "$long" > out.txt 2> err.txt
status=$?
[ "$status" = 1 ] && grep -q "File name too long" err.txt || { cat err.txt; fail "a 300-character name: status $status"; }

mkdir sub && ln -s model.safetensors sub/link
"$axon" "${train[@]}" --out sub/link > out.txt 2> err.txt || { cat err.txt; fail "--out sub/link failed"; }
[ -L sub/link ] || fail "sub/link is no longer a link"
[ -f sub/model.safetensors ] || fail "the model is not in sub/, beside the link that names it"
[ ! -e model.safetensors ] || fail "the relative link was followed from the working folder, not from sub/"
echo "output_targets: OK"
