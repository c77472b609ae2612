# Yukta's container image: the yukta binary (static, CGO_ENABLED=0) on Debian
# bookworm-slim with the PostgreSQL 15 server binaries, so the embedded
# database works with no configuration, and YUKTA_DATABASE_URL points it at
# an external PostgreSQL instead (compose.yaml). docs/operations.md#deploy
# says how to run it and what was verified where.
#
#   docker build --build-arg VERSION=$(git describe --tags --always --dirty) -t yukta .
#   docker run -d -p 8080:8080 -v yukta-data:/var/lib/yukta \
#     -e YUKTA_API_KEY="$(openssl rand -base64 32)" yukta
#
# The base images are arguments so a mirror or a local copy can stand in.
ARG GO_IMAGE=golang:1.26-bookworm
ARG RUNTIME_IMAGE=debian:bookworm-slim

FROM ${GO_IMAGE} AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-X github.com/yukta/yukta/bootstrap.Version=${VERSION}" \
      -o /out/yukta . \
 && /out/yukta version

FROM ${RUNTIME_IMAGE}
# postgresql-common first, told not to create Debian's own cluster; then the
# PostgreSQL 15 server binaries (initdb, postgres) for the embedded cluster,
# tini to reap the processes the cluster leaves to PID 1, and CA certificates
# for HTTP nodes calling https URLs.
RUN set -eux; \
    apt-get update; \
    apt-get install -y --no-install-recommends postgresql-common; \
    sed -ri 's/#?[[:space:]]*create_main_cluster[[:space:]]*=.*/create_main_cluster = false/' /etc/postgresql-common/createcluster.conf; \
    apt-get install -y --no-install-recommends postgresql-15 tini ca-certificates; \
    rm -rf /var/lib/apt/lists/*; \
    test -x /usr/lib/postgresql/15/bin/initdb; \
    test -z "$(ls -A /etc/postgresql/15 2>/dev/null)"; \
    groupadd --system --gid 10001 yukta; \
    useradd --system --uid 10001 --gid yukta --home-dir /var/lib/yukta --no-create-home --shell /usr/sbin/nologin yukta; \
    install -d -o yukta -g yukta -m 0700 /var/lib/yukta

COPY --from=build /out/yukta /usr/local/bin/yukta
COPY deploy/docker-entrypoint.sh /usr/local/bin/docker-entrypoint.sh
COPY deploy/healthcheck.sh /usr/local/bin/yukta-healthcheck
RUN chmod 0755 /usr/local/bin/docker-entrypoint.sh /usr/local/bin/yukta-healthcheck

# YUKTA_ADDR is left to the entrypoint: 0.0.0.0:8080 once API keys are set.
ENV YUKTA_DATA_DIR=/var/lib/yukta \
    YUKTA_PG_BIN=/usr/lib/postgresql/15/bin \
    YUKTA_LOG_FORMAT=json
VOLUME /var/lib/yukta
WORKDIR /var/lib/yukta
USER 10001:10001
EXPOSE 8080
STOPSIGNAL SIGTERM
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 CMD ["yukta-healthcheck"]
ENTRYPOINT ["/usr/bin/tini", "--", "docker-entrypoint.sh"]
CMD ["serve"]
