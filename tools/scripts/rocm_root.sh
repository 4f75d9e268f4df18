#!/bin/bash
# Makes (or reuses) a minimal Debian unstable root holding ROCm 6.4's hipRTC, its builtins, comgr and
# the HIP runtime, in which sagejit's programs built on this machine run (glibc and libstdc++ are
# backward compatible). Usage: rocm_root.sh DIR. Needs root and debootstrap; the first run downloads
# about 250 MB (network-bound, a few minutes), later runs reuse DIR when its stamp says it is complete
# with these packages. The mirror is debootstrap's and apt's default: none is named here.
# A root is built in DIR.partial and renamed when complete, so an interrupted run leaves no DIR that
# looks usable; a stale DIR.partial is removed first (refused while anything is mounted inside it).
set -euo pipefail

readonly PACKAGES="libhiprtc6 libhiprtc-builtins6 libamd-comgr3 libamdhip64-6"
readonly STAMP_NAME=.sagejit-rocm-root

die() { echo "rocm_root.sh: $*" >&2; exit 1; }

[ $# -eq 1 ] || die "usage: rocm_root.sh DIR"
dir=$(realpath -m "$1")
stamp_text="suite sid; packages $PACKAGES"

if [ -f "$dir/$STAMP_NAME" ] && [ "$(cat "$dir/$STAMP_NAME")" = "$stamp_text" ]; then
  echo "rocm_root.sh: reusing $dir"
  exit 0
fi
[ "$(id -u)" -eq 0 ] || die "making the ROCm root needs root (debootstrap, chroot); run as root or point SAGEJIT_ROCM_ROOT at a root made by this script"
command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap; make deps installs it)"

# Nothing may be mounted below a tree that is about to be deleted: a bind mount of the build or
# source tree there would be deleted with it.
mounted_below() { awk -v d="$1/" 'index($2 "/", d) == 1 { found = 1 } END { exit !found }' /proc/self/mounts; }
remove_tree() {
  [ -e "$1" ] || return 0
  mounted_below "$1" && die "$1: something is mounted inside it; unmount it first (findmnt -R $1)"
  rm -rf --one-file-system "$1"
}

partial="$dir.partial"
remove_tree "$partial"
[ -e "$dir" ] && { echo "rocm_root.sh: $dir is incomplete or for other packages; rebuilding it"; remove_tree "$dir"; }
mkdir -p "$(dirname "$dir")"

echo "rocm_root.sh: debootstrap --variant=minbase sid $partial (network-bound, a few minutes)"
debootstrap --variant=minbase sid "$partial" > "$partial.log" 2>&1 \
  || { tail -20 "$partial.log" >&2; die "debootstrap failed (log above; full log $partial.log)"; }
# The unstable suite's Release file carries a Valid-Until date; a mirror snapshot that has passed
# it (or a machine clock ahead of it) would make apt refuse the index that debootstrap just used.
apt_options=(-o Acquire::Check-Valid-Until=false)
chroot "$partial" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_options[@]}" update >> "$partial.log" 2>&1 \
  || { tail -20 "$partial.log" >&2; die "apt-get update inside the root failed (log above)"; }
# shellcheck disable=SC2086
chroot "$partial" env DEBIAN_FRONTEND=noninteractive apt-get "${apt_options[@]}" install -y --no-install-recommends $PACKAGES \
  >> "$partial.log" 2>&1 || { tail -20 "$partial.log" >&2; die "installing $PACKAGES inside the root failed (log above)"; }
chroot "$partial" apt-get clean
echo "$stamp_text" > "$partial/$STAMP_NAME"
mv "$partial" "$dir"
mv "$partial.log" "$dir.log"
echo "rocm_root.sh: $dir is ready ($(du -sh "$dir" | cut -f1))"
