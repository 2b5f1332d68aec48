#!/usr/bin/env bash
# deps.sh [--check] [--quiet] [--for WHAT] PKG... — make sure the Debian
# packages PKG... are installed; the one installer of the project.  `make
# deps`, `make test`, `make fuzz` and every target with an optional part
# (PyTorch for the peer, Chromium for the report, npm for the engines) call
# it with their own list, so nothing is installed before it is used.
#
#   --check   install nothing: name what is missing and fail
#   --quiet   say nothing when every package is there
#   --for W   what the packages are for, shown when installing ("make test:
#             compilers, Criterion ...")
#
# Installs with apt-get as root, else through `sudo -n` when that needs no
# password, else names the command to run and fails.  When another process
# holds the package manager's lock (an unattended upgrade, another build's
# install), it says who and waits, up to DEPS_LOCK_WAIT seconds (default
# 600), then fails naming the holder.
set -euo pipefail
check=0 quiet=0 why=
while [ $# -gt 0 ]; do
    case $1 in
        --check) check=1 ;;
        --quiet) quiet=1 ;;
        --for) why=${2:?--for needs a value}; shift ;;
        --) shift; break ;;
        -*) echo "deps.sh: unknown option $1" >&2; exit 2 ;;
        *) break ;;
    esac
    shift
done
missing=()
for p in "$@"; do
    if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
        missing+=("$p")
    fi
done
if [ ${#missing[@]} -eq 0 ]; then
    [ $quiet = 1 ] || echo "$# Debian packages present"
    exit 0
fi
for_what=${why:+ (for $why)}
if [ $check = 1 ]; then
    echo "attnguard: missing packages: ${missing[*]}$for_what; install them with: make deps" >&2
    exit 1
fi
sudo=()
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        sudo=(sudo -n)
    else
        echo "attnguard: missing packages: ${missing[*]}$for_what" >&2
        echo "attnguard: this user cannot install them; run:" \
             "sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
        exit 1
    fi
fi

# Who holds one of apt's or dpkg's locks: "pid 1234 (unattended-upgr)", or
# nothing.  The locks are fcntl locks, listed in /proc/locks by inode.
LOCKS="/var/lib/dpkg/lock-frontend /var/lib/dpkg/lock /var/lib/apt/lists/lock
       /var/cache/apt/archives/lock"
lock_holder() {
    local f ino pid
    for f in $LOCKS; do
        ino=$(stat -c %i "$f" 2>/dev/null) || continue
        pid=$(awk -v ino="$ino" '{n = split($6, f, ":")} n == 3 && f[3] == ino && $5 > 0 \
            {print $5; exit}' /proc/locks 2>/dev/null)
        if [ -n "$pid" ] && [ "$pid" != $$ ]; then
            echo "pid $pid ($(cat "/proc/$pid/comm" 2>/dev/null || echo '?')) on $f"
            return
        fi
    done
}

# apt_get ARGS...: apt-get, waiting (bounded) while another process holds
# the lock.  Its output goes to $log; shown when it fails.
wait_max=${DEPS_LOCK_WAIT:-600}
log=$(mktemp "${TMPDIR:-/tmp}/attnguard-deps-XXXXXX")
trap 'rm -f "$log"' EXIT
start=$(date +%s)
apt_get() {
    local said=0 now holder
    while :; do
        if "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get "$@" >"$log" 2>&1; then
            return 0
        fi
        if ! grep -qiE 'could not (get|open) lock|unable to (acquire|lock)' "$log"; then
            echo "attnguard: apt-get $* failed:" >&2
            tail -n 20 "$log" >&2
            exit 1
        fi
        now=$(date +%s)
        holder=$(lock_holder)
        if [ $((now - start)) -ge "$wait_max" ]; then
            echo "attnguard: gave up after ${wait_max} s waiting for the package lock" \
                 "(held by ${holder:-another process}); set DEPS_LOCK_WAIT to wait longer" >&2
            exit 1
        fi
        if [ $said = 0 ] || [ $((now - said)) -ge 30 ]; then
            echo "attnguard: another process holds the package lock" \
                 "(${holder:-see /proc/locks}); waiting," \
                 "$((wait_max - (now - start))) s at most"
            said=$now
        fi
        sleep 3
    done
}

echo "attnguard: installing ${missing[*]}$for_what"
t0=$(date +%s)
apt_get update -qq
apt_get install -y -qq --no-install-recommends "${missing[@]}"
echo "attnguard: installed ${missing[*]} in $(($(date +%s) - t0)) s"
