#!/bin/bash
# ctest test_hiprtc_root (tests/hiprtc_root.cmake): sagejit's own hipRTC backend, ROCm 6.4's real
# hipRTC, every gfx1201 and gfx1200 object that sagejit-precompile --all-specializations builds from
# the shipped tables, and the ISA checks clang's objects get.
# Usage: hiprtc_root_test.sh BUILD_DIR CHECKER PRECOMPILE INFO
#  1. the root: SAGEJIT_ROCM_ROOT, else BUILD_DIR/rocm-root, made or reused by tools/scripts/rocm_root.sh;
#  2. inside it (chroot; the build tree bind-mounted at its own path, /proc mounted; both unmounted on
#     every exit): sagejit-info must show the HIP runtime loaded with 0 devices and the reason, and
#     hipRTC 6.4 able to build gfx1201; sagejit-precompile --compiler hiprtc emits the objects (the
#     attention pipeline and the selftest probes);
#  3. here, where the LLVM tools are: CHECKER (hiprtc_objects_check) inspects each object.
# Every failure fails the test, including a root that cannot be made: it never skips.
set -euo pipefail

die() { echo "test_hiprtc_root: FAILED: $*" >&2; exit 1; }
[ $# -eq 4 ] || die "usage: hiprtc_root_test.sh BUILD_DIR CHECKER PRECOMPILE INFO"
build=$(realpath "$1"); checker=$2; precompile=$(realpath "$3"); info=$(realpath "$4")
source_dir=$(cd "$(dirname "$0")/../.." && pwd)
root=$(realpath -m "${SAGEJIT_ROCM_ROOT:-$build/rocm-root}")

"$source_dir/tools/scripts/rocm_root.sh" "$root" || die "the ROCm root $root could not be made (see above)"

# A run killed outright (ctest's timeout) cannot clean up: unmount what an earlier run left inside
# the root, deepest first, before mounting again.
awk -v d="$root/" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r | while read -r stale; do
  echo "test_hiprtc_root: unmounting $stale, left by an earlier run"
  umount "$stale" || umount -l "$stale" || die "cannot unmount $stale"
done
rm -rf "$root/opt/rocm-6.4.3"

work=$(mktemp -d "$build/hiprtc-root-test.XXXXXX")
mounts=()
added_opt=""  # the /opt/rocm-6.4.3 this test puts into the root, removed again on every exit
copied=""     # the build's programs copied into the root where a bind mount is refused, removed on exit
cleanup() {
  local status=$? i
  [ -n "$added_opt" ] && rm -rf "$added_opt"
  for ((i = ${#mounts[@]} - 1; i >= 0; i--)); do
    umount "${mounts[i]}" 2>/dev/null || umount -l "${mounts[i]}" || echo "test_hiprtc_root: could not unmount ${mounts[i]}" >&2
  done
  if [ -n "$copied" ] && ! awk -v d="$copied/" 'index($2 "/", d) == 1 { f = 1 } END { exit !f }' /proc/self/mounts; then
    rm -rf "$copied"
  fi
  rm -rf "$work"
  exit $status
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mount_into_root() {  # mount_into_root ARGS... TARGET_INSIDE; fails (without dying) when mount is refused
  local target="$root${*: -1}"
  mkdir -p "$target"
  mount "${@:1:$#-1}" "$target" || return 1
  mounts+=("$target")
}
mount_into_root -t proc proc /proc || echo "test_hiprtc_root: mounting /proc in the root was refused; going on without it"
# The programs inside see the build tree at its own path: bind-mounted, or (where mounting is not
# allowed, e.g. an unprivileged container) the programs copied there (they link sagejit statically).
# `view` is the prefix under which this side sees what they write.
view=""
if ! mount_into_root --bind "$build" "$build"; then
  echo "test_hiprtc_root: bind-mounting the build tree was refused; copying the programs into the root"
  [ "$(dirname "$precompile")" -ef "$build/tools" ] && [ "$(dirname "$info")" -ef "$build/tools" ] \
    || die "the programs must lie in BUILD_DIR/tools to be copied"
  copied="$root$build"
  mkdir -p "$copied/tools" "$root$work"
  cp "$precompile" "$info" "$copied/tools/"
  precompile=$build/tools/$(basename "$precompile")
  info=$build/tools/$(basename "$info")
  view=$root
fi

in_root() { chroot "$root" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root SAGEJIT_LOG=warn "$@"; }

echo "== sagejit-info inside $root"
in_root "$info" -v > "$work/info.txt" 2>&1 || { cat "$work/info.txt"; die "sagejit-info failed inside the root"; }
cat "$work/info.txt"
grep -Eq '^HIP +loaded, 0 devices: .+' "$work/info.txt" \
  || die "the HIP device layer did not load ROCm's libamdhip64 and report 0 devices with a reason"
grep -Eq 'gfx1201 compiles with hiprtc 6\.4' "$work/info.txt" || die "sagejit-info does not say that hipRTC 6.4 builds gfx1201"

echo "== sagejit-precompile --compiler hiprtc inside $root"
in_root "$precompile" --arch gfx1201,gfx1200 --compiler hiprtc --all-specializations --kernels attention,prepare,probe --jobs 2 \
  --cache-dir "$work/cache" --emit-dir "$work/objects" || die "sagejit-precompile --compiler hiprtc failed inside the root"

echo "== ISA checks of the hipRTC objects"
SAGEJIT_EMITTED_OBJECTS="$view$work/objects" SAGEJIT_EXPECT_COMPILER="hiprtc 6.4" SAGEJIT_EXPECT_ARCHS="gfx1201 gfx1200" \
  "$checker" || die "hipRTC's code objects fail the ISA checks (above)"
# The layouts users have, with ROCm 6.4's real files under each layout's names: hipRTC must be
# found there, read as ROCm 6.4 (not "unknown"), and compile gfx1201.
#   /opt/rocm-6.4.3/lib   versioned files and links (rule (d), the root's own /opt)
#   torch/lib             a PyTorch ROCm wheel: libhiprtc.so, libamdhip64.so, libamd_comgr.so, unversioned
#   _rocm_sdk_core/lib    TheRock's wheels: libhiprtc.so.7 next to libamdhip64.so.7
lib=$root/usr/lib/x86_64-linux-gnu
hiprtc_file=$(basename "$(readlink -f "$lib/libhiprtc.so.6")")
hip_file=$(basename "$(readlink -f "$lib/libamdhip64.so.6")")
opt_lib=/opt/rocm-6.4.3/lib
[ -e "$root/opt/rocm-6.4.3" ] && die "$root/opt/rocm-6.4.3 exists already; it is this test's to make and remove"
added_opt="$root/opt/rocm-6.4.3"
mkdir -p "$root$opt_lib"
cp "$lib/$hiprtc_file" "$lib/$hip_file" "$root$opt_lib/"
ln -s "$hiprtc_file" "$root$opt_lib/libhiprtc.so.6"
ln -s "$hip_file" "$root$opt_lib/libamdhip64.so.6"
torch_lib=$work/site/torch/lib
sdk_lib=$work/site/_rocm_sdk_core/lib
mkdir -p "$view$torch_lib" "$view$sdk_lib"
cp "$lib/$hiprtc_file" "$view$torch_lib/libhiprtc.so"
cp "$lib/$hip_file" "$view$torch_lib/libamdhip64.so"
cp "$(readlink -f "$lib/libamd_comgr.so.3")" "$view$torch_lib/libamd_comgr.so"
cp "$lib/$hiprtc_file" "$view$sdk_lib/libhiprtc.so.7"
cp "$lib/$hip_file" "$view$sdk_lib/libamdhip64.so.7"

check_layout() {  # check_layout NAME DIR ENV...
  local name=$1 dir=$2 out=$work/layout-$1
  shift 2
  echo "== layout $name: $dir"
  in_root "$@" "$info" > "$out.info" 2>&1 || { cat "$out.info"; die "sagejit-info failed in layout $name"; }
  grep -E '^hipRTC ' "$out.info" | head -1
  grep -Eq "^hipRTC +found .* $dir/libhiprtc[^/ ]* *\$" "$out.info" || die "layout $name: hipRTC was not taken from $dir"
  grep -Eq 'gfx1201 compiles with hiprtc 6\.4' "$out.info" || die "layout $name: hipRTC there does not read as ROCm 6.4 able to build gfx1201"
  in_root "$@" "$precompile" --arch gfx1201 --compiler hiprtc --kernels attention_gfx12 --dtype bf16 --head-dim 64 \
    --jobs 2 --cache-dir "$out.cache" --emit-dir "$out.objects" > "$out.precompile" 2>&1 \
    || { cat "$out.precompile"; die "layout $name: hipRTC did not compile gfx1201"; }
  SAGEJIT_EMITTED_OBJECTS="$view$out.objects" SAGEJIT_EXPECT_COMPILER="hiprtc 6.4" SAGEJIT_EXPECT_ARCHS=gfx1201 \
    "$checker" > "$out.check" 2>&1 || { cat "$out.check"; die "layout $name: the objects fail the ISA checks"; }
  grep -E 'code objects checked' "$out.check"
}
check_layout opt "$opt_lib"
check_layout torch "$torch_lib" SAGEJIT_LIBRARY_DIRS="$torch_lib"
check_layout rocm_sdk "$sdk_lib" SAGEJIT_LIBRARY_DIRS="$sdk_lib"
echo "test_hiprtc_root: passed"
