#!/usr/bin/env bash
# The Debian package, installed on this machine and removed again (root; run by
# scripts/test): `bash scripts/package` makes it; `dpkg -i` installs it; the installed
# binary names the commit of this checkout; every man page, completion, the unit (checked by
# systemd-analyze) and the conffile are where the package says; `dpkg -r` and `dpkg -P` take
# them all away. A kflame package installed before is left as it was (the test is skipped).
set -euo pipefail
cd "$(dirname "$0")/../.."
fail() { echo "package test: $*" >&2; exit 1; }
if [ "$(id -u)" != 0 ]; then echo "package test: skipped (needs root for dpkg -i)"; exit 0; fi
if dpkg-query -W -f '${Status}' kflame 2>/dev/null | grep -q 'installed'; then
  echo "package test: skipped (a kflame package is installed here already: left as it is)"
  exit 0
fi
deb=$(bash scripts/package | tail -1)
[ -f "$deb" ] || fail "scripts/package printed no package path: $deb"
size=$(dpkg-deb -f "$deb" Installed-Size)
[ "$(dpkg-deb -f "$deb" Depends)" = "libc6 (>= 2.17)" ] || fail "the package depends on $(dpkg-deb -f "$deb" Depends)"
echo "package: $deb ($(du -h "$deb" | cut -f1), installed size ${size} KiB)"
cleanup() { dpkg -P kflame >/dev/null 2>&1 || true; }
trap cleanup EXIT
dpkg -i "$deb" >/dev/null
# The binary: stripped, the commit of this checkout.
[ -x /usr/bin/kflame ] || fail "/usr/bin/kflame is missing"
! readelf -S /usr/bin/kflame | grep -q '\.symtab' || fail "/usr/bin/kflame is not stripped (it has a .symtab)"
bytes=$(stat -c %s /usr/bin/kflame)
[ "$bytes" -le $((40 * 1024 * 1024)) ] || fail "/usr/bin/kflame is $bytes bytes, over 40 MB"
# For old distributions: no glibc symbol newer than 2.17, no library beyond glibc's.
newest=$(objdump -T /usr/bin/kflame | grep -o 'GLIBC_[0-9.]*' | sed 's/GLIBC_//' | sort -t. -k1,1n -k2,2n -k3,3n -u | tail -1)
case "$newest" in 2.1[0-7]|2.1[0-7].*|2.[0-9]|2.[0-9].*) ;; *) fail "/usr/bin/kflame needs GLIBC_$newest (over 2.17)" ;; esac
libs=$(objdump -p /usr/bin/kflame | awk '$1 == "NEEDED" {print $2}' | sort | tr '\n' ' ')
for l in $libs; do
  case "$l" in libc.so.6|libm.so.6|libpthread.so.0|libdl.so.2|librt.so.1|ld-linux-x86-64.so.2) ;; *) fail "/usr/bin/kflame needs $l, not part of glibc" ;; esac
done
echo "binary: $bytes bytes stripped, newest glibc symbol $newest, needs $libs"
v=$(/usr/bin/kflame --version)
head=$(git rev-parse --short=12 HEAD 2>/dev/null || echo unknown)
case "$v" in *"commit $head,"*) ;; *) fail "--version does not name $head: $v" ;; esac
echo "installed: $v"
# A man page for kflame and for each command it lists.
for cmd in $(/usr/bin/kflame --help | sed -n '/^Commands:/,/^$/p' | grep -E '^  [a-z]' | awk '$1 != "help" {print $1}'); do
  [ -f "/usr/share/man/man1/kflame-$cmd.1.gz" ] || fail "no man page for kflame $cmd"
done
[ -f /usr/share/man/man1/kflame.1.gz ] || fail "no man page kflame.1"
zcat /usr/share/man/man1/kflame-record.1.gz | grep -qF -- '\-\-call\-graph' || fail "kflame-record.1 lacks --call-graph"
for f in /usr/share/bash-completion/completions/kflame /usr/share/zsh/vendor-completions/_kflame \
         /usr/share/fish/vendor_completions.d/kflame.fish /lib/systemd/system/kflame-watch.service \
         /etc/kflame/watch.toml /usr/share/doc/kflame/README.md; do
  [ -s "$f" ] || fail "$f is missing or empty"
done
grep -q '^ExecStart=/usr/bin/kflame watch' /lib/systemd/system/kflame-watch.service || fail "the unit does not run /usr/bin/kflame"
if command -v systemd-analyze >/dev/null; then
  said=$(systemd-analyze verify /lib/systemd/system/kflame-watch.service 2>&1) || fail "systemd-analyze verify: $said"
  [ -z "$said" ] || fail "systemd-analyze verify: $said"
fi
dpkg-query -W -f '${Conffiles}' kflame | grep -q /etc/kflame/watch.toml || fail "/etc/kflame/watch.toml is not a conffile"
/usr/bin/kflame watch --config /etc/kflame/watch.toml --check >/dev/null || fail "the installed configuration does not pass --check"
bash -n /usr/share/bash-completion/completions/kflame || fail "the bash completion is not valid bash"
# Removal: the files go; purging takes the conffile too.
dpkg -r kflame >/dev/null
[ ! -e /usr/bin/kflame ] || fail "/usr/bin/kflame is left after dpkg -r"
[ ! -e /usr/share/man/man1/kflame.1.gz ] || fail "the man pages are left after dpkg -r"
dpkg -P kflame >/dev/null
[ ! -e /etc/kflame/watch.toml ] || fail "/etc/kflame/watch.toml is left after dpkg -P"
trap - EXIT
echo "package test: installed, checked and removed"
