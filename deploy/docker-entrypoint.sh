#!/bin/sh
# Entrypoint of Yukta's container image (see the Dockerfile and
# docs/operations.md#deploy). It only prepares the environment, then execs
# yukta, so yukta gets the signals (tini, PID 1, forwards them):
#
#   - VAR_FILE reads a secret from a file (Docker/compose secrets) into VAR,
#     for YUKTA_API_KEY, YUKTA_MCP_API_KEY, YUKTA_JOURNAL_KEY,
#     YUKTA_DATABASE_URL and PGPASSWORD (read by the PostgreSQL driver).
#   - With no YUKTA_ADDR and no --addr, `serve` listens on 0.0.0.0:8080 when
#     API keys are configured. Without keys Yukta refuses any address but
#     loopback, and a container that only listens inside itself is of no
#     use, so the entrypoint stops and says what to set instead. Setting
#     YUKTA_ADDR (for example 127.0.0.1:8080) skips this choice.
#   - No arguments, or arguments starting with "-", mean `yukta serve ...`;
#     anything else runs that yukta command (`version`, a client command).
set -eu

die() {
	echo "yukta entrypoint: $*" >&2
	exit 2
}

# file_env VAR: VAR from the file named by VAR_FILE; both set is an error.
file_env() {
	var=$1
	eval "val=\${$var:-}"
	eval "file=\${${var}_FILE:-}"
	if [ -z "$file" ]; then
		return 0
	fi
	[ -z "$val" ] || die "both $var and ${var}_FILE are set; set only one"
	[ -r "$file" ] || die "${var}_FILE: cannot read $file (is the secret mounted, and readable by uid $(id -u)?)"
	val=$(cat "$file")
	[ -n "$val" ] || die "${var}_FILE: $file is empty"
	export "$var=$val"
	unset "${var}_FILE"
}

for v in YUKTA_API_KEY YUKTA_MCP_API_KEY YUKTA_JOURNAL_KEY YUKTA_DATABASE_URL PGPASSWORD; do
	file_env "$v"
done

if [ $# -eq 0 ]; then
	set -- serve
fi
case $1 in
-*) set -- serve "$@" ;;
esac

if [ "$1" = serve ]; then
	addr_flag=no
	keys=no
	[ -z "${YUKTA_API_KEY:-}" ] && [ -z "${YUKTA_API_KEYS:-}" ] || keys=yes
	for a in "$@"; do
		case $a in
		-addr | --addr | -addr=* | --addr=*) addr_flag=yes ;;
		-api-keys | --api-keys | -api-keys=* | --api-keys=*) keys=yes ;;
		esac
	done
	if [ -z "${YUKTA_ADDR:-}" ] && [ $addr_flag = no ]; then
		if [ $keys = no ]; then
			die "no API key is configured, and without one Yukta listens on loopback only, which nobody outside this container can reach.
Set YUKTA_API_KEYS to a key file (for example a mounted secret), or YUKTA_API_KEY (or YUKTA_API_KEY_FILE) to one ADMIN key;
the server then listens on 0.0.0.0:8080. To run it closed inside the container on purpose, set YUKTA_ADDR=127.0.0.1:8080."
		fi
		export YUKTA_ADDR=0.0.0.0:8080
	fi
	# The embedded cluster needs a data folder this user can write; a bind
	# mount keeps the host folder's owner, so say which uid needs it.
	if [ -z "${YUKTA_DATABASE_URL:-}" ] && [ -n "${YUKTA_DATA_DIR:-}" ] && [ -d "$YUKTA_DATA_DIR" ] && [ ! -w "$YUKTA_DATA_DIR" ]; then
		die "the data folder $YUKTA_DATA_DIR is not writable by uid $(id -u); give it to that user (chown $(id -u):$(id -g) on the host folder) or use a named volume"
	fi
fi

exec yukta "$@"
