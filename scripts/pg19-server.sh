#!/usr/bin/env bash
# Builds upstream PostgreSQL 19 from a source tree you provide, and runs a
# throw-away cluster of it on a unix socket, to check clockscope against the
# real thing (bench/pg19_side_by_side.sh, the opt-in tests that read
# CLOCKSCOPE_PG19, `clockscope explain`).
#
#   scripts/pg19-server.sh build SRC_DIR PREFIX [--with-dblink]
#       Builds the tree in SRC_DIR (in place) and installs it into PREFIX.
#       SRC_DIR: an upstream PostgreSQL 19 tree (configure says 19...), e.g. a
#       `git archive` of upstream master after the TSC clock source was
#       committed. A tree whose `configure` has CRLF line endings (an import
#       made on Windows) is converted to LF first, and the executable bits the
#       archive lost are restored. Configured as the project's notes say
#       (--without-icu --without-readline --without-zlib --without-openssl
#       --enable-tap-tests --enable-nls: the translations go into
#       PREFIX/share/locale), `make -j$(nproc)`, `make install`; with
#       --with-dblink also contrib/dblink. About 12 minutes on 2 cores. Needs
#       gcc, make, bison, flex, perl, pkg-config and msgfmt (Debian: apt-get install
#       bison flex libipc-run-perl pkg-config gettext). The full log goes to
#       PREFIX/clockscope-build.log.
#   scripts/pg19-server.sh start PREFIX DIR [PORT]
#       Creates a cluster in DIR/data (initdb -U postgres --auth=trust, on the
#       first start; PORT, default 5432, is fixed then) and starts it with its
#       socket in DIR, no TCP (listen_addresses = ''), log in DIR/server.log.
#       As root, initdb and the server run as the `postgres` user (initdb
#       refuses root) and DIR is given to that user.
#       Then: psql -h DIR -p PORT -U postgres
#   scripts/pg19-server.sh stop PREFIX DIR
#       Stops that cluster (pg_ctl stop -m fast); nothing to do if it is not running.
#
# PREFIX, SRC_DIR and DIR must lie outside this repository: the project never
# commits PostgreSQL's source or builds. Exit status 2 for bad arguments, 1
# when a step fails (its log's last lines are shown).
set -euo pipefail

me="pg19-server.sh"
repo=$(cd "$(dirname "$0")/.." && pwd -P)
usage="usage: scripts/$me build SRC_DIR PREFIX [--with-dblink] | start PREFIX DIR [PORT] | stop PREFIX DIR"

die() {
    echo "$me: $*" >&2
    exit 2
}

# The absolute, symlink-free form of a path that may not exist yet.
absolute() {
    realpath -m -- "$1"
}

outside_repo() {
    local what=$1 path
    path=$(absolute "$2")
    case "$path/" in
    "$repo/"*) die "$what '$2' is inside the repository ($repo); choose a directory outside it" ;;
    esac
}

need_tools() {
    local missing=()
    for t in "$@"; do
        command -v "$t" >/dev/null 2>&1 || missing+=("$t")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        die "missing tools: ${missing[*]} (Debian: apt-get install bison flex libipc-run-perl pkg-config gcc make perl)"
    fi
}

# Runs "$@" with its output appended to $log; on failure shows the log's end.
logged() {
    local step=$1
    shift
    echo "$me: $step" >&2
    if ! "$@" >>"$log" 2>&1; then
        echo "$me: $step failed; the last lines of $log:" >&2
        tail -n 30 "$log" >&2
        exit 1
    fi
}

build() {
    [ $# -ge 2 ] && [ $# -le 3 ] || die "$usage"
    local src=$1 prefix=$2 dblink=no
    if [ $# -eq 3 ]; then
        [ "$3" = "--with-dblink" ] || die "build: unknown option '$3' (only --with-dblink)"
        dblink=yes
    fi
    outside_repo PREFIX "$prefix"
    outside_repo SRC_DIR "$src"
    [ -f "$src/configure" ] || die "SRC_DIR '$src' has no configure script (not a PostgreSQL source tree)"
    grep -q "^PACKAGE_VERSION='19" "$src/configure" ||
        die "SRC_DIR '$src' is not PostgreSQL 19 (configure's PACKAGE_VERSION is $(grep -m1 '^PACKAGE_VERSION=' "$src/configure" | cut -d= -f2))"
    [ -f "$src/src/bin/pg_test_timing/pg_test_timing.c" ] || die "SRC_DIR '$src' has no src/bin/pg_test_timing"
    need_tools gcc make bison flex perl pkg-config msgfmt realpath
    prefix=$(absolute "$prefix")
    mkdir -p "$prefix"
    log="$prefix/clockscope-build.log"
    : >"$log"
    cd "$src"
    if grep -q $'\r' configure; then
        echo "$me: converting CRLF line endings to LF" >&2
        grep -rIl $'\r' . | xargs -r perl -pi -e 's/\r\n/\n/'
    fi
    chmod +x configure config/* src/tools/* 2>/dev/null || true
    find . \( -name '*.sh' -o -name '*.pl' \) -exec chmod +x {} +
    logged "configure --prefix=$prefix" ./configure --prefix="$prefix" --without-icu --without-readline \
        --without-zlib --without-openssl --enable-tap-tests --enable-nls
    logged "make -j$(nproc) (about 12 minutes on 2 cores)" make -j"$(nproc)"
    logged "make install" make install
    if [ "$dblink" = yes ]; then
        logged "contrib/dblink" make -C contrib/dblink install
    fi
    for b in postgres initdb pg_ctl psql pg_test_timing; do
        [ -x "$prefix/bin/$b" ] || {
            echo "$me: $prefix/bin/$b is missing after make install (see $log)" >&2
            exit 1
        }
    done
    echo "$me: installed $("$prefix/bin/postgres" --version) into $prefix" >&2
    echo "$me: opt-in tests: CLOCKSCOPE_PG19=$prefix cargo test -p clockscope-cli --test all pg19_" >&2
}

# Runs a PostgreSQL program as the cluster's owner.
as_owner() {
    if [ "$(id -u)" -eq 0 ]; then
        runuser -u postgres -- "$@"
    else
        "$@"
    fi
}

cluster_args() {
    [ $# -ge 2 ] || die "$usage"
    prefix=$(absolute "$1")
    [ -x "$prefix/bin/pg_ctl" ] || die "PREFIX '$1' has no bin/pg_ctl (build it first: scripts/$me build SRC_DIR PREFIX)"
    outside_repo DIR "$2"
    dir=$(absolute "$2")
    case "$dir" in
    *"'"* | *'\'* | *[[:space:]]*) die "DIR '$2' contains a quote, backslash or space (it goes into postgresql.conf)" ;;
    esac
    [ ${#dir} -le 90 ] || die "DIR '$2' is too long for a unix socket path (${#dir} > 90 characters)"
    data="$dir/data"
}

start() {
    [ $# -ge 2 ] && [ $# -le 3 ] || die "$usage"
    cluster_args "$1" "$2"
    local port=${3:-5432}
    case "$port" in
    '' | *[!0-9]*) die "PORT must be a number, got '$port'" ;;
    esac
    [ "$port" -ge 1 ] && [ "$port" -le 65535 ] || die "PORT must be in 1..65535, got $port"
    mkdir -p "$dir"
    if [ "$(id -u)" -eq 0 ]; then
        id postgres >/dev/null 2>&1 || die "running as root and there is no 'postgres' user to run initdb as"
        chown postgres: "$dir"
    fi
    if [ ! -f "$data/PG_VERSION" ]; then
        as_owner "$prefix/bin/initdb" -D "$data" -U postgres --auth=trust -E UTF8 --locale=C --no-sync \
            >"$dir/initdb.log" 2>&1 || {
            echo "$me: initdb failed; see $dir/initdb.log:" >&2
            tail -n 20 "$dir/initdb.log" >&2
            exit 1
        }
        printf "\n# scripts/%s\nport = %s\nlisten_addresses = ''\nunix_socket_directories = '%s'\n" \
            "$me" "$port" "$dir" | as_owner tee -a "$data/postgresql.conf" >/dev/null
    else
        port=$(sed -n "s/^port = \([0-9]*\)$/\1/p" "$data/postgresql.conf" | tail -n 1)
    fi
    if as_owner "$prefix/bin/pg_ctl" -D "$data" status >/dev/null 2>&1; then
        echo "$me: already running: psql -h $dir -p $port -U postgres" >&2
        return 0
    fi
    as_owner "$prefix/bin/pg_ctl" -D "$data" -l "$dir/server.log" -w -t 120 start >/dev/null || {
        echo "$me: the server did not start; see $dir/server.log:" >&2
        tail -n 20 "$dir/server.log" >&2
        exit 1
    }
    echo "$me: running: psql -h $dir -p $port -U postgres" >&2
}

stop() {
    [ $# -eq 2 ] || die "$usage"
    cluster_args "$1" "$2"
    if [ ! -f "$data/postmaster.pid" ]; then
        echo "$me: not running ($data)" >&2
        return 0
    fi
    as_owner "$prefix/bin/pg_ctl" -D "$data" -m fast -w -t 60 stop >/dev/null
    echo "$me: stopped ($data)" >&2
}

[ $# -ge 1 ] || die "$usage"
cmd=$1
shift
case "$cmd" in
build) build "$@" ;;
start) start "$@" ;;
stop) stop "$@" ;;
*) die "unknown command '$cmd'; $usage" ;;
esac
