#!/usr/bin/env bash
# Regenerates the x86-64 machine code the kernels load at run time: gen_*.py write the assembly sources (*.S),
# GNU as and objcopy (binutils) turn each into a raw blob under src/main/resources. Sources and blobs are both
# checked in, so building or running jtrain needs only a JDK; MachineCodeSourceTest fails when a blob no longer
# matches its source. Run after editing a generator.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out="$here/../resources/dev/jtrain/tensor/kernel"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for gen in "$here"/gen_*.py; do
    name=$(basename "$gen" .py); name=${name#gen_}
    python3 "$gen" > "$here/${name}_x86_64.S"
done
for src in "$here"/*.S; do
    name=$(basename "$src" .S)
    as --64 -o "$tmp/$name.o" "$src"
    objcopy -O binary -j .text "$tmp/$name.o" "$out/$name.bin"
    echo "$out/$name.bin: $(stat -c %s "$out/$name.bin") bytes"
done
