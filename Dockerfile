# DiffStream: a release build with the Swift runtime linked statically, on a slim Debian 12 runtime.
#   docker build -t diffstream .
#   docker run -p 8080:8080 -v diffstream-data:/data -e DIFFSTREAM_TOKEN=... diffstream   # production: no examples
#   docker run -p 8080:8080 diffstream --demo                                             # the examples and the demo
# docs/operations.md has the production command and what to set.

FROM swift:6.3.1-bookworm AS build
RUN apt-get update \
    && apt-get install -y --no-install-recommends libssl-dev zlib1g-dev libsqlite3-dev libcurl4-openssl-dev libhiredis-dev pkg-config \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Package.swift ./
RUN swift package resolve
# Tests/ too: SwiftPM refuses a package whose test targets have no directory, even to build one product.
COPY Sources ./Sources
COPY Tests ./Tests
COPY Public ./Public
# diffstream-watch: `diffstream watch` runs it (the client's HTTP stack stays out of the server's process).
RUN swift build -c release --static-swift-stdlib --product diffstream \
    && swift build -c release --static-swift-stdlib --product diffstream-watch \
    && install -D "$(swift build -c release --show-bin-path)/diffstream" /out/diffstream \
    && install -D "$(swift build -c release --show-bin-path)/diffstream-watch" /out/diffstream-watch

FROM debian:bookworm-slim
# The libraries `ldd` lists for the binary (libssl3: libssl and libcrypto; zlib1g; libsqlite3-0; libstdc++6 and
# libgcc-s1 for the statically linked Swift runtime; libcurl4 for FoundationNetworking, which diffstream-watch
# (`diffstream watch`) links through DiffStreamClient; libhiredis0.14 for `--redis`, through the CHiredis system-library target), and
# CA certificates. scripts/check-docker-runtime.sh installs exactly the line after '# runtime-packages'.
# runtime-packages
RUN apt-get update && apt-get install -y --no-install-recommends libssl3 zlib1g libsqlite3-0 libstdc++6 libgcc-s1 libcurl4 libhiredis0.14 ca-certificates \
    && rm -rf /var/lib/apt/lists/* \
    && useradd --system --uid 10001 --home-dir /data --shell /usr/sbin/nologin diffstream \
    && mkdir -p /data && chown diffstream /data
COPY --from=build /out/diffstream /out/diffstream-watch /usr/local/bin/
COPY --from=build /src/Public /usr/share/diffstream/Public
VOLUME /data
WORKDIR /data
USER diffstream
EXPOSE 8080
# The durable store lives in the volume (mount one to keep feeds across containers). Where and how the
# server listens and keeps its data is set here, in the environment, so it holds whatever arguments a
# `docker run` gives; the CMD below only picks what is hosted. Nothing here sets DIFFSTREAM_EXAMPLES or
# DIFFSTREAM_DEMO: `docker run IMAGE --demo` replaces the CMD and gets every example with its demo.
ENV DIFFSTREAM_HOST=0.0.0.0 DIFFSTREAM_PORT=8080 DIFFSTREAM_PUBLIC=/usr/share/diffstream/Public DIFFSTREAM_DATA=/data
HEALTHCHECK --interval=30s --timeout=3s --start-period=5s --retries=3 \
    CMD ["bash", "-c", "exec 3<>/dev/tcp/127.0.0.1/8080 && printf 'GET /healthz HTTP/1.1\\r\\nHost: localhost\\r\\nConnection: close\\r\\n\\r\\n' >&3 && head -n 1 <&3 | grep -q ' 200 '"]
# The image runs the server; its arguments are the CMD's, or what `docker run IMAGE ARG…` gives instead
# (`--demo`; `watch URL FEED`, the client; `backup DIR`). By default a production server: the feeds
# clients write, the page and the browser library, no example view models and no demo.
# scripts/check-docker-runtime.sh runs exactly this ENTRYPOINT and CMD (and `--demo`) in a minimal root.
ENTRYPOINT ["diffstream"]
CMD ["--examples", "none"]
