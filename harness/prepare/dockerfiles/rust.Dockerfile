# Image of one Rust adapter (harness/images.py fills the build context):
#   adapter/    the adapter directory (the Cargo package; its Cargo.lock names the SDK version)
#   env/        what `cargo build --release` left on the host (env/target/release/adapter, linked
#               against the glibc of the host, the same Debian release as the base image)
# python3 is installed: the adapter spawns the reference server (mounted read-only at
# /mcpcm/servers/reference) over stdio.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
ARG ADAPTER
ENV DEBIAN_FRONTEND=noninteractive
RUN apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends python3 ca-certificates >/dev/null \
 && rm -rf /var/lib/apt/lists/*
COPY adapter/ /mcpcm/clients/${ADAPTER}/
COPY env/ /mcpcm/env/
