#!/bin/sh
# usage: scripts/package.sh   Builds the Debian package without the test suite (-DFSAUDIT_TESTS=OFF:
# only what the package ships is compiled) into build-pkg/: build-pkg/fsaudit_VERSION-1_amd64.deb.
set -eu
cd "$(dirname "$0")/.."
sh scripts/install-deps.sh
sh scripts/build.sh build-pkg -DFSAUDIT_TESTS=OFF
(cd build-pkg && rm -f fsaudit_*.deb && cpack -G DEB)
ls build-pkg/fsaudit_*.deb
