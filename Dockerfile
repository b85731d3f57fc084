# fanout on Debian 12, built by the project's own setup and build scripts (docs/deploy.md).
#   docker build -t fanout:dev .
#   docker run --rm fanout:dev fanout-train --version
# Two stages: the build stage installs every build and test dependency (scripts/setup.sh) and
# builds; the runtime stage gets the seven fanout binaries and exactly the Debian packages that
# own the libraries they link (scripts/runtime-packages.sh), plus OpenBLAS' OpenMP build, which
# LibTorch loads through the libblas alternative, and mpirun (openmpi-bin) for fanout-partition
# --distributed.
FROM debian:12 AS build
WORKDIR /src
# Dependencies first: this layer is rebuilt only when the package list changes.
COPY scripts/setup.sh scripts/setup.sh
RUN FANOUT_SETUP_QUIET=1 scripts/setup.sh && rm -rf /var/lib/apt/lists/*
COPY . .
RUN rm -rf build && FANOUT_BUILD_DIR=build scripts/build.sh -DCMAKE_BUILD_TYPE=Release \
 && mkdir -p /opt/fanout/bin \
 && for b in generate partition server sampler train launch query; do \
      cp "build/bin/fanout-$b" /opt/fanout/bin/; done \
 && scripts/runtime-packages.sh /opt/fanout/bin/fanout-* > /opt/fanout/runtime-packages.txt \
 && cat /opt/fanout/runtime-packages.txt

FROM debian:12
COPY --from=build /opt/fanout /opt/fanout
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      $(cat /opt/fanout/runtime-packages.txt) libopenblas0-openmp util-linux ca-certificates openmpi-bin \
 && rm -rf /var/lib/apt/lists/* \
 && /opt/fanout/bin/fanout-train --version
ENV PATH=/opt/fanout/bin:$PATH
# Each server and trainer is started by fanout-launch; give the pod or container the threads it
# may use through fanout-launch's --num-omp-threads / fanout-server's --num-threads.
WORKDIR /data
CMD ["fanout-launch", "--help"]
