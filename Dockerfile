# The webhook and controller images, built from source on Debian 12 (the
# packages the project builds and tests against), from the repository's root:
#   docker build --build-arg PROGRAM=muster-webhook    -t muster-webhook .
#   docker build --build-arg PROGRAM=muster-controller -t muster-controller .
# The same files as `make images` writes without a daemon (images/images.sh,
# which this build stage runs with --rootfs): the binary, exactly the shared
# libraries ldd lists for it, the CA bundle, a passwd entry for 65532; no
# shell. Both run as that unprivileged user on a read-only root file system.
# (The barrier is a static binary with an image of its own:
# initbarrier/Dockerfile.)
FROM debian:bookworm AS build
RUN apt-get update && apt-get install -y --no-install-recommends \
	gcc make libc6-dev libcurl4-openssl-dev libcjson-dev libyaml-dev \
	libmicrohttpd-dev libgnutls28-dev ca-certificates python3 \
	&& rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY . .
ARG PROGRAM
ARG VERSION=dev
RUN test -n "$PROGRAM" && make VERSION=$VERSION bin/$PROGRAM \
	&& bash images/images.sh --rootfs $PROGRAM /rootfs

FROM scratch
COPY --from=build /rootfs /
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/muster"]
