# Chorus server image: `chorus serve|migrate|agent|key ...` (ENTRYPOINT is the chorus binary).
#   docker build -t chorus:local .            (docker compose builds it for you)
#   docker build --build-arg VERSION=v1.2.3 .  (sets `chorus --version`)

# ---- build ----
FROM golang:1.26-bookworm AS build
WORKDIR /src
# Pure Go (the SQLite driver is modernc.org/sqlite): a static binary that runs on any base image.
ENV CGO_ENABLED=0
# Modules first, in their own layer: re-downloaded only when go.mod or go.sum change.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=dev
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w -X main.version=${VERSION}" -o /out/chorus ./cmd/chorus

# ---- runtime ----
# Alpine rather than distroless: busybox wget lets docker-compose.yml health-check /readyz.
FROM alpine:3.23
RUN apk add --no-cache ca-certificates tzdata \
	&& addgroup -S -g 10001 chorus \
	&& adduser -S -D -H -u 10001 -G chorus -h /var/lib/chorus chorus \
	&& mkdir -p /var/lib/chorus \
	&& chown chorus:chorus /var/lib/chorus
COPY --from=build /out/chorus /usr/local/bin/chorus
# Local state (only used without CHORUS_DATABASE_URL, i.e. SQLite) lives in a writable directory.
ENV CHORUS_DATA_DIR=/var/lib/chorus \
	CHORUS_ADDR=0.0.0.0:8637
WORKDIR /var/lib/chorus
# Numeric, so that runtimes enforcing "run as non-root" can verify it without /etc/passwd.
USER 10001:10001
EXPOSE 8637
ENTRYPOINT ["chorus"]
CMD ["serve"]
