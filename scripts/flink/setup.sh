#!/usr/bin/env bash
# Fetches what a local Flink cluster and Beam's Flink job server need, once, into
# build/flink/ (git-ignored); nothing is downloaded when a build runs (docs/scale-out.md).
#
#   build/flink/flink-1.19.0/lib/*.jar, bin/bash-java-utils.jar   Flink's runtime jars,
#       from PyPI's apache-flink-libraries (an sdist that ships them; no start scripts)
#   build/flink/job-server/lib/*.jar                               Beam's Flink 1.19 runner
#       and its dependencies, resolved by Maven from scripts/flink/pom.xml
#   build/flink/job-server/beam-runners-flink-1.19-job-server-2.62.0.jar
#       the launcher: a jar whose manifest names the main class and lib/ (java -jar runs it)
#
# Every fetched file is checked against scripts/flink/sha256sums; a file that differs, or
# one the list does not name, stops the set-up. Re-running is cheap: a stamp holding the
# checksum list's hash says the set-up is complete. Needs java (17) and mvn (3.8), and
# reaches PyPI and Maven Central only here.
set -euo pipefail
cd "$(dirname "$0")/../.."

FLINK_VERSION=1.19.0
BEAM_VERSION=2.62.0
OUT=${FLINK_SETUP_DIR:-build/flink}
SUMS=scripts/flink/sha256sums
PY=${PY:-.venv/bin/python}
JOB_SERVER_JAR=beam-runners-flink-1.19-job-server-$BEAM_VERSION.jar

die() { echo "flink-setup: $*" >&2; exit 1; }
# java and mvn: Debian's packages when missing (as scripts/setup.sh installs ffmpeg)
missing=()
command -v java >/dev/null 2>&1 || missing+=(openjdk-17-jdk-headless)
command -v mvn >/dev/null 2>&1 || missing+=(maven)
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; elif command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    die "no java or mvn on PATH and no root to install ${missing[*]}: install a JDK 17 and Maven 3.8"; fi
  echo "flink-setup: installing Debian packages: ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
command -v java >/dev/null 2>&1 || die "no java on PATH: install a JDK 17 (Debian: apt-get install openjdk-17-jdk-headless)"
command -v mvn >/dev/null 2>&1 || die "no mvn on PATH: install Maven 3.8 (Debian: apt-get install maven)"
[ -x "$PY" ] || die "no $PY: run 'make setup' first"

stamp="$OUT/.complete-$(cat "$SUMS" scripts/flink/pom.xml "$0" | sha256sum | cut -c1-16)"
if [ -f "$stamp" ]; then
  echo "flink-setup: ready ($OUT: Flink $FLINK_VERSION, Beam job server $BEAM_VERSION)"
  exit 0
fi

# Every file under FOLDER is listed in $SUMS as PREFIX/<path>, with its sha256, and every
# listed file is there (pipelines/scaleout/flink_install.py).
flink_install() { PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" "$PY" -m pipelines.scaleout.flink_install "$@"; }
check_sums() {
  flink_install verify "$1" "$2" || die "$1 is not what $SUMS pins (files above); the set-up stopped"
}

# Only what this script fetches: build/flink/ also holds clusters' logs (cluster/, check/).
rm -rf "$OUT"/.complete-* "$OUT/downloads" "$OUT/flink-$FLINK_VERSION" "$OUT/job-server"
mkdir -p "$OUT"

echo "flink-setup: Flink $FLINK_VERSION's jars from PyPI (apache-flink-libraries, ~230 MB)"
downloads="$OUT/downloads"
# --no-deps --no-build-isolation: only the sdist itself (pip reads its metadata with the
# setuptools already installed); nothing is installed anywhere.
"$PY" -m pip download -q --no-deps --no-binary :all: --no-build-isolation \
  -d "$downloads" "apache-flink-libraries==$FLINK_VERSION"
check_sums "$downloads" downloads
flink="$OUT/flink-$FLINK_VERSION"
mkdir -p "$flink"
tar xzf "$downloads/apache-flink-libraries-$FLINK_VERSION.tar.gz" -C "$flink" \
  --strip-components=2 "apache-flink-libraries-$FLINK_VERSION/deps/lib" \
  "apache-flink-libraries-$FLINK_VERSION/deps/bin"
rm -rf "$downloads"
check_sums "$flink" "flink-$FLINK_VERSION"

echo "flink-setup: Beam $BEAM_VERSION's Flink 1.19 runner and its dependencies from Maven Central (~150 MB)"
server="$OUT/job-server"
mvn -B -q -C -Dstyle.color=never -f scripts/flink/pom.xml dependency:copy-dependencies \
  -DincludeScope=runtime -DoutputDirectory="$PWD/$server/lib" \
  || die "mvn could not resolve scripts/flink/pom.xml (output above)"
check_sums "$server/lib" job-server/lib
flink_install launcher "$server" >/dev/null
# The launcher must start: the driver prints its usage for an unknown option.
usage=$(java -jar "$server/$JOB_SERVER_JAR" --no-such-option 2>&1 || true)
[[ "$usage" == *--flink-master* ]] || die "the job server launcher $server/$JOB_SERVER_JAR does not start"

touch "$stamp"
echo "flink-setup: ready ($OUT: Flink $FLINK_VERSION, Beam job server $BEAM_VERSION)"
