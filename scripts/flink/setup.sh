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
command -v java >/dev/null 2>&1 || die "no java on PATH: install a JDK 17 (Debian: apt-get install openjdk-17-jdk-headless)"
command -v mvn >/dev/null 2>&1 || die "no mvn on PATH: install Maven 3.8 (Debian: apt-get install maven)"
[ -x "$PY" ] || die "no $PY: run 'make setup' first"

stamp="$OUT/.complete-$(cat "$SUMS" scripts/flink/pom.xml "$0" | sha256sum | cut -c1-16)"
if [ -f "$stamp" ]; then
  echo "flink-setup: ready ($OUT: Flink $FLINK_VERSION, Beam job server $BEAM_VERSION)"
  exit 0
fi

# check_sums FOLDER PREFIX: every file under FOLDER is listed in $SUMS as PREFIX/<path>
# with this sha256, and every listed file under PREFIX is there.
check_sums() {
  local folder=$1 prefix=$2
  (cd "$folder" && find . -type f | sed 's|^\./||' | sort) > "$OUT/.found"
  grep "  $prefix/" "$SUMS" | sed "s|  $prefix/|  |" > "$OUT/.expected"
  local unlisted missing
  unlisted=$(awk '{print $2}' "$OUT/.expected" | sort | comm -13 - "$OUT/.found")
  missing=$(awk '{print $2}' "$OUT/.expected" | sort | comm -23 - "$OUT/.found")
  [ -z "$unlisted" ] || die "not in $SUMS (a different version resolved?): $(echo $unlisted)"
  [ -z "$missing" ] || die "missing from $folder: $(echo $missing)"
  (cd "$folder" && sha256sum --quiet -c "$OLDPWD/$OUT/.expected") \
    || die "checksums differ from $SUMS (files above): the download is not the pinned one"
  rm -f "$OUT/.found" "$OUT/.expected"
}

rm -rf "$OUT" && mkdir -p "$OUT"

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
"$PY" - "$server" "$JOB_SERVER_JAR" <<'PY'
import os, sys, zipfile
folder, name = sys.argv[1:]
jars = sorted(f"lib/{n}" for n in os.listdir(os.path.join(folder, "lib")) if n.endswith(".jar"))
# Manifest lines are at most 72 bytes; a continuation line starts with one space.
text = "Class-Path: " + " ".join(jars)
lines = [text[:72]] + [" " + text[i:i + 71] for i in range(72, len(text), 71)]
manifest = "\r\n".join(["Manifest-Version: 1.0",
                        "Main-Class: org.apache.beam.runners.flink.FlinkJobServerDriver",
                        *lines]) + "\r\n\r\n"
with zipfile.ZipFile(os.path.join(folder, name), "w") as jar:
    jar.writestr("META-INF/MANIFEST.MF", manifest)
PY
# The launcher must start: the driver prints its usage for an unknown option.
usage=$(java -jar "$server/$JOB_SERVER_JAR" --no-such-option 2>&1 || true)
[[ "$usage" == *--flink-master* ]] || die "the job server launcher $server/$JOB_SERVER_JAR does not start"

touch "$stamp"
echo "flink-setup: ready ($OUT: Flink $FLINK_VERSION, Beam job server $BEAM_VERSION)"
