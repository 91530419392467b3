# Image of one Go adapter (harness/images.py fills the build context):
#   adapter/    the adapter directory (the Go module; the cells' working directory)
#   env/        what `go build` left on the host (env/adapter: a static binary, CGO_ENABLED=0)
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
