#!/bin/bash
# HEALTHCHECK of Yukta's container image: GET /readyz on the server's port
# at 127.0.0.1, through bash's /dev/tcp, so the image needs no curl. The
# port is YUKTA_ADDR's (the entrypoint's default is 8080). Exit 0 when
# /readyz answers 200, 1 otherwise (docs/operations.md#deploy).
set -u
addr=${YUKTA_ADDR:-0.0.0.0:8080}
port=${addr##*:}
if ! exec 3<>"/dev/tcp/127.0.0.1/$port"; then
	echo "yukta healthcheck: nothing listens on 127.0.0.1:$port" >&2
	exit 1
fi
printf 'GET /readyz HTTP/1.0\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n' "$port" >&3
status=
IFS=$'\r' read -r -t 4 status <&3 || true
case $status in
"HTTP/1."?" 200 "*) exit 0 ;;
esac
echo "yukta healthcheck: /readyz answered ${status:-nothing}" >&2
exit 1
