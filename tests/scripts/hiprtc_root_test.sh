#!/bin/bash
# ctest test_hiprtc_root (tests/hiprtc_root.cmake): sagejit's own hipRTC backend, ROCm 6.4's real
# hipRTC, every gfx1201 and gfx1200 object that sagejit-precompile --all-specializations builds from
# the shipped tables, and the ISA checks clang's objects get.
# Usage: hiprtc_root_test.sh BUILD_DIR CHECKER PRECOMPILE INFO
#  1. the root: SAGEJIT_ROCM_ROOT, else BUILD_DIR/rocm-root, made or reused by tools/scripts/rocm_root.sh;
#  2. inside it (chroot; the build tree bind-mounted at its own path, /proc mounted; both unmounted on
#     every exit): sagejit-info must show the HIP runtime loaded with 0 devices and the reason, and
#     hipRTC 6.4 able to build gfx1201; sagejit-precompile --compiler hiprtc emits the objects;
#  3. here, where the LLVM tools are: CHECKER (hiprtc_objects_check) inspects each object.
# Every failure fails the test, including a root that cannot be made: it never skips.
set -euo pipefail

die() { echo "test_hiprtc_root: FAILED: $*" >&2; exit 1; }
[ $# -eq 4 ] || die "usage: hiprtc_root_test.sh BUILD_DIR CHECKER PRECOMPILE INFO"
build=$(realpath "$1"); checker=$2; precompile=$(realpath "$3"); info=$(realpath "$4")
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
root=$(realpath -m "${SAGEJIT_ROCM_ROOT:-$build/rocm-root}")

"$source_dir/tools/scripts/rocm_root.sh" "$root" || die "the ROCm root $root could not be made (see above)"

work=$(mktemp -d "$build/hiprtc-root-test.XXXXXX")
mounts=()
cleanup() {
  local status=$? i
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}" || echo "test_hiprtc_root: could not unmount ${mounts[i]}" >&2
  done
  rm -rf "$work"
  exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mount_into_root() {  # mount_into_root ARGS... TARGET_INSIDE
  local target="$root${*: -1}"
  mkdir -p "$target"
  mount "${@:1:$#-1}" "$target" || die "mount ${*:1:$#-1} $target failed"
  mounts+=("$target")
}
mount_into_root -t proc proc /proc
mount_into_root --bind "$build" "$build"

in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root SAGEJIT_LOG=warn "$@"; }

echo "== sagejit-info inside $root"
in_root "$info" -v > "$work/info.txt" 2>&1 || { cat "$work/info.txt"; die "sagejit-info failed inside the root"; }
cat "$work/info.txt"
grep -Eq '^HIP +loaded, 0 devices: .+' "$work/info.txt" \
  || die "the HIP device layer did not load ROCm's libamdhip64 and report 0 devices with a reason"
grep -Eq 'gfx1201 compiles with hiprtc 6\.4' "$work/info.txt" || die "sagejit-info does not say that hipRTC 6.4 builds gfx1201"

echo "== sagejit-precompile --compiler hiprtc inside $root"
in_root "$precompile" --arch gfx1201,gfx1200 --compiler hiprtc --all-specializations --jobs 2 \
  --cache-dir "$work/cache" --emit-dir "$work/objects" || die "sagejit-precompile --compiler hiprtc failed inside the root"

echo "== ISA checks of the hipRTC objects"
SAGEJIT_EMITTED_OBJECTS="$work/objects" SAGEJIT_EXPECT_COMPILER="hiprtc 6.4" SAGEJIT_EXPECT_ARCHS="gfx1201 gfx1200" \
  "$checker" || die "hipRTC's code objects fail the ISA checks (above)"
echo "test_hiprtc_root: passed"
