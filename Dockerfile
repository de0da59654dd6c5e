# The webhook and controller images, built from source on Debian 12 (the
# packages the project builds and tests against), from the repository's root:
#   docker build --build-arg PROGRAM=muster-webhook    -t muster-webhook .
#   docker build --build-arg PROGRAM=muster-controller -t muster-controller .
# Both run as an unprivileged user on a read-only root file system. (The
# barrier is a static binary with an image of its own: initbarrier/Dockerfile.)
FROM debian:bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends \
	gcc make libc6-dev libcurl4-openssl-dev libcjson-dev libyaml-dev \
	libmicrohttpd-dev libgnutls28-dev \
	&& rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
ARG PROGRAM
ARG VERSION=dev
RUN test -n "$PROGRAM" && make VERSION=$VERSION bin/$PROGRAM

FROM debian:bookworm-slim
# The runtime libraries of both programs (the webhook needs only cjson,
# libmicrohttpd and GnuTLS).
RUN apt-get update && apt-get install -y --no-install-recommends \
	ca-certificates libcurl4 libcjson1 libyaml-0-2 libmicrohttpd12 libgnutls30 \
	&& rm -rf /var/lib/apt/lists/*
ARG PROGRAM
COPY --from=build /src/bin/$PROGRAM /usr/local/bin/muster
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/muster"]
