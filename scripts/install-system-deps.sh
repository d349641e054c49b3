#!/usr/bin/env bash
# Installs the Debian packages the test suite drives for real. Idempotent and quiet when
# everything is present; needs root (as on the project's machines) and does nothing otherwise.
set -euo pipefail
packages=(podman buildah runc fuse-overlayfs uidmap slirp4netns debootstrap chromium wrk)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "install-system-deps: not root; missing ${missing[*]} (tests that need them will be skipped)" >&2
  exit 0
fi
echo "install-system-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
# A third-party source that cannot be reached must not stop the install: apt-get install below
# fails on its own if a package really is unavailable.
apt-get -o DPkg::Lock::Timeout=300 update -qq ||
  echo "install-system-deps: apt-get update reported errors; trying the install anyway" >&2
apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
