# Image of one Java adapter (harness/images.py fills the build context):
#   adapter/    the adapter directory (the Maven project; the cells' working directory)
#   env/        what `mvn package` left on the host (env/build/adapter.jar and its env/build/lib/)
# The JVM comes from the distribution (Debian's OpenJDK 17, the release the host builds with);
# python3 is installed: the adapter spawns the reference server (mounted read-only at
# /mcpcm/servers/reference) over stdio.
ARG BASE_IMAGE
FROM ${BASE_IMAGE}
ARG ADAPTER
ENV DEBIAN_FRONTEND=noninteractive
RUN mkdir -p /usr/share/man/man1 \
 && apt-get update -qq \
 && apt-get install -y -qq --no-install-recommends python3 ca-certificates openjdk-17-jre-headless >/dev/null \
 && rm -rf /var/lib/apt/lists/*
COPY adapter/ /mcpcm/clients/${ADAPTER}/
COPY env/ /mcpcm/env/
