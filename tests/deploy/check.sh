#!/usr/bin/env bash
# tests/deploy/check.sh — static checks of the deployment artefacts (fast, no
# Kafka): yamllint on all YAML under deploy/, promtool check + test on the
# Prometheus rules, metric names in rules and dashboard exist in the sources,
# the Grafana dashboard is valid JSON, `systemd-analyze verify` on the unit
# (when available), the example configs pass `syncgate --check-config` (when
# built), `bash -n` on the sandbox scripts, `--help` of the test-bed scripts
# exits 0 with the usage, and the Containerfile copies only
# paths that exist. Prints one line per check; exits non-zero on any failure.
# Env: BUILD_DIR (default build) for build/proxy/syncgate.
set -uo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$repo"
BUILD_DIR="${BUILD_DIR:-build}"
failed=0 passed=0 skipped=0
tmp="$(mktemp -d /tmp/syncgate-deploy-check.XXXXXX)"
trap 'rm -rf "$tmp"' EXIT

check() {   # check NAME cmd...: run, report, count
  local name="$1"; shift
  if out="$("$@" 2>&1)"; then
    passed=$((passed + 1)); echo "ok    $name"
  else
    failed=$((failed + 1)); echo "FAIL  $name"; echo "$out" | sed 's/^/      /'
  fi
}
skip() { skipped=$((skipped + 1)); echo "skip  $1"; }

# -- YAML -------------------------------------------------------------------------------
if command -v yamllint >/dev/null; then
  check "yamllint deploy/" yamllint -s -c deploy/.yamllint deploy
else skip "yamllint (not installed; deploy/install-deps.sh installs it)"; fi

# -- Prometheus rules -------------------------------------------------------------------
PROMTOOL="${PROMTOOL:-$(command -v promtool || echo /usr/bin/promtool)}"
if [ -x "$PROMTOOL" ]; then
  check "promtool check rules" "$PROMTOOL" check rules deploy/prometheus/syncgate-rules.yaml
  check "promtool test rules" bash -c "cd deploy/prometheus && '$PROMTOOL' test rules syncgate-rules.test.yaml"
else skip "promtool (not installed; deploy/install-deps.sh installs prometheus)"; fi

# -- metric names ---------------------------------------------------------------------------
metric_names() {
  grep -rhoE '"syncgate_[a-z0-9_]+"' --include='*.c' proxy mirror conf | tr -d '"' | sort -u
  sed 's/#.*//; s/[[:space:]]//g; /^$/d' tests/deploy/planned-metrics.txt
}
metrics_exist() {
  local known used bad=0 n base
  known="$(metric_names)"
  # names not part of a longer word (e.g. not the topic __syncgate_state)
  used="$(grep -rhoE '(^|[^_a-z0-9])syncgate_[a-z0-9_]+' deploy/prometheus/syncgate-rules.yaml \
            deploy/grafana/syncgate.json | sed -E 's/^[^s]//' | sort -u)"
  for n in $used; do
    base="$n"
    for suf in _bucket _sum _count; do
      [[ "$n" == *"$suf" ]] && grep -qx "${n%"$suf"}" <<<"$known" && base="${n%"$suf"}"
    done
    grep -qx "$base" <<<"$known" || { echo "unknown metric: $n"; bad=1; }
  done
  return $bad
}
check "metric names in rules and dashboard exist" metrics_exist

# -- Grafana ------------------------------------------------------------------------------
check "grafana dashboard is JSON with panels" python3 -c '
import json, sys
d = json.load(open("deploy/grafana/syncgate.json"))
assert d["uid"] == "syncgate" and d["panels"], "no panels"
for p in d["panels"]:
    for t in p.get("targets", []):
        assert t.get("expr"), "panel %s: empty expr" % p["title"]
'

# -- systemd --------------------------------------------------------------------------------
if command -v systemd-analyze >/dev/null; then
  # verify needs the ExecStart binaries to exist: point them at the build (or /bin/true)
  sgbin="$repo/$BUILD_DIR/proxy/syncgate"; [ -x "$sgbin" ] || sgbin=/bin/true
  mkdir -p "$tmp/unit"
  sed "s#/usr/local/bin/syncgate#$sgbin#g" deploy/systemd/syncgate.service > "$tmp/unit/syncgate.service"
  check "systemd-analyze verify syncgate.service" bash -c "
    out=\$(systemd-analyze verify '$tmp/unit/syncgate.service' 2>&1); rc=\$?
    echo \"\$out\"; [ \$rc -eq 0 ] && ! grep -q syncgate.service <<<\"\$out\""
else skip "systemd-analyze (not available)"; fi

# -- example configs -------------------------------------------------------------------------
if [ -x "$BUILD_DIR/proxy/syncgate" ]; then
  # secrets and token files must exist: stand-ins under a temp dir
  mkdir -p "$tmp/etc/secrets"
  echo x > "$tmp/etc/secrets/dr-east.password"; echo t > "$tmp/etc/secrets/admin.token"
  echo x > "$tmp/etc/admin.token"
  sed "s#/etc/syncgate#$tmp/etc#g" deploy/systemd/syncgate.yaml > "$tmp/systemd.yaml"
  check "syncgate --check-config deploy/systemd/syncgate.yaml" "$BUILD_DIR/proxy/syncgate" --check-config "$tmp/systemd.yaml"
  python3 -c '
import sys, yaml
for d in yaml.safe_load_all(open("deploy/kubernetes/syncgate-sidecar.yaml")):
    if d and d["kind"] == "ConfigMap":
        sys.stdout.write(d["data"]["syncgate.yaml"])' | sed "s#/etc/syncgate#$tmp/etc#g" > "$tmp/k8s.yaml"
  check "syncgate --check-config (kubernetes ConfigMap)" "$BUILD_DIR/proxy/syncgate" --check-config "$tmp/k8s.yaml"
else skip "syncgate --check-config (no $BUILD_DIR/proxy/syncgate)"; fi

# -- kubernetes shape ----------------------------------------------------------------------------
check "kubernetes: sidecar shares the pod, /readyz probe, scrape annotations" python3 -c '
import yaml
docs = [d for d in yaml.safe_load_all(open("deploy/kubernetes/syncgate-sidecar.yaml")) if d]
sts = next(d for d in docs if d["kind"] == "StatefulSet")
pod = sts["spec"]["template"]
ann = pod["metadata"]["annotations"]
assert ann["prometheus.io/scrape"] == "true" and ann["prometheus.io/port"] == "9464"
names = [c["name"] for c in pod["spec"]["containers"]]
assert names == ["kafka", "syncgate"], names
sg = pod["spec"]["containers"][1]
assert sg["readinessProbe"]["httpGet"]["path"] == "/readyz"
assert not pod["spec"].get("hostNetwork")
'

# -- scripts, Containerfile -----------------------------------------------------------------------
check "bash -n deploy/local/*.sh tests/deploy/*.sh" bash -c 'for f in deploy/local/*.sh tests/deploy/*.sh; do bash -n "$f" || exit 1; done'
# --help is a question, not a mistake: usage on stdout, exit 0 (bad usage: stderr, exit 2)
help_exits_0() {
  local s out
  for s in tests/kafka/cluster.sh tests/kafka/mm2.sh tests/kafka/testmirror.sh deploy/local/down.sh; do
    out="$(bash "$s" --help 2>/dev/null)" || { echo "$s --help: exit $?"; return 1; }
    grep -q "$(basename "$s")" <<<"$out" || { echo "$s --help: no usage on stdout"; return 1; }
  done
  bash tests/kafka/cluster.sh --bogus >/dev/null 2>&1; [ $? -eq 2 ] || { echo "cluster.sh --bogus: not exit 2"; return 1; }
}
check "test-bed scripts: --help prints the usage and exits 0" help_exits_0
check "Containerfile COPY sources exist" bash -c '
  bad=0
  while read -r src; do
    [ -e "$src" ] || { echo "missing: $src"; bad=1; }
  done < <(grep -E "^COPY " deploy/container/Containerfile | grep -v -- "--from=" \
           | sed -E "s/^COPY +//" | awk "{for (i = 1; i < NF; i++) print \$i}")
  grep -q "^USER " deploy/container/Containerfile || { echo "no USER"; bad=1; }
  exit $bad'

echo
echo "tests/deploy/check.sh: $passed passed, $failed failed, $skipped skipped"
[ $failed -eq 0 ]
