#!/bin/sh
# Lab test of the Debian package: build it with CPack, install it here with dpkg -i, check the
# layout, the config, the units and the alert tests as installed, remove it (the config stays), purge
# it (nothing stays). usage: deb_lab_test.sh BUILD_DIR
# Exit 77 = skipped (not root, or an fsaudit package is already installed: never touch that).
set -eu
build=$1
skip() {
  if [ "${FSAUDIT_REQUIRE_LAB:-0}" = 1 ]; then echo "lab test cannot run (FSAUDIT_REQUIRE_LAB=1): $1"; exit 1; fi
  echo "lab test skipped: $1"; exit 77
}
[ "$(id -u)" = 0 ] || skip "needs root (dpkg -i)"
if dpkg-query -W -f='${Status}' fsaudit 2>/dev/null | grep -q "installed"; then skip "an fsaudit package is already installed"; fi
fail() { echo "FAIL: $*"; exit 1; }
installed=0
tlspid= tlsdir= shim= made_run_systemd=0
cleanup() {
  if [ -n "$tlspid" ]; then kill "$tlspid" 2>/dev/null || true; wait "$tlspid" 2>/dev/null || true; fi
  if [ -n "$tlsdir" ]; then rm -rf "$tlsdir"; fi
  if [ -n "$shim" ]; then rm -rf "$shim"; fi
  if [ "$made_run_systemd" = 1 ]; then rmdir /run/systemd/system 2>/dev/null || true; fi
  if [ "$installed" = 1 ]; then dpkg -P fsaudit >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT

rm -f "$build"/fsaudit_*.deb
(cd "$build" && cpack -G DEB >/dev/null) || fail "cpack"
deb=$(ls "$build"/fsaudit_*-1_*.deb | head -1)
[ -f "$deb" ] || fail "no .deb in $build"
# Version N+1 of the same tree (Debian revision 2), for the upgrade below.
(cd "$build" && cpack -G DEB -D CPACK_DEBIAN_PACKAGE_RELEASE=2 >/dev/null) || fail "cpack (revision 2)"
deb2=$(ls "$build"/fsaudit_*-2_*.deb | head -1)
[ -f "$deb2" ] || fail "no revision-2 .deb in $build"
dpkg-deb -I "$deb" | grep -q "^ Depends: .*libsystemd0" || fail "Depends not from shlibdeps: $(dpkg-deb -f "$deb" Depends)"

# lintian: no errors, and no warning beyond the one a package built outside a Debian source tree
# cannot avoid (its changelog closes no ITP bug).
lintian_allowed="initial-upload-closes-no-bugs"
out=$(lintian --tag-display-limit 0 "$deb" 2>&1) || true
echo "$out" | sed 's/^/lintian: /'
echo "$out" | grep -q "^E: " && fail "lintian reports errors"
unexpected=$(echo "$out" | grep "^W: " | grep -v -E "W: fsaudit: ($(echo $lintian_allowed | tr ' ' '|'))( |$)" || true)
[ -z "$unexpected" ] || fail "lintian warnings beyond the known ones: $unexpected"

# No systemd runs here as PID 1: /run/systemd/system (made for the installs only, if absent) makes
# the maintainer scripts take their systemd branch, and shims first in PATH record what they ask of
# deb-systemd-invoke and systemctl instead of doing it.
shim=$(mktemp -d)
# systemctl --root=DIR works on unit files alone (deb-systemd-helper's preset on a first install):
# that call goes through to the real systemctl; calls that would need a running systemd only record.
printf '#!/bin/sh\necho "deb-systemd-invoke $*" >>%s/calls\n' "$shim" >"$shim/deb-systemd-invoke"
printf '#!/bin/sh\necho "systemctl $*" >>%s/calls\ncase " $* " in *" --root="*) exec %s "$@";; esac\n' \
  "$shim" "$(command -v systemctl)" >"$shim/systemctl"
chmod 0755 "$shim/deb-systemd-invoke" "$shim/systemctl"
with_systemd_branch() {
  if [ ! -d /run/systemd/system ]; then mkdir -p /run/systemd/system; made_run_systemd=1; fi
  rc=0; PATH="$shim:$PATH" "$@" >"$shim/dpkg.log" 2>&1 || rc=$?
  if [ "$made_run_systemd" = 1 ]; then rmdir /run/systemd/system; made_run_systemd=0; fi
  cat "$shim/dpkg.log"
  return $rc
}
installed=1
with_systemd_branch dpkg -i "$deb" || fail "dpkg -i"
# A fresh install enables the unit and starts nothing (the operator reviews the config first).
if grep -q "^deb-systemd-invoke" "$shim/calls" 2>/dev/null; then fail "a fresh install asked: $(cat "$shim/calls")"; fi
rm -f "$shim/calls"
for f in /usr/share/doc/fsaudit/README.md /usr/share/doc/fsaudit/docs/operations.md /usr/share/doc/fsaudit/docs/security.md /usr/share/doc/fsaudit/docs/runbooks.md \
         /usr/sbin/fsauditd /usr/bin/fsauditctl /usr/sbin/fsaudit-scrub-detach /usr/libexec/fsaudit/fsaudit-helper /usr/lib/fsaudit/fsaudit-tls.so \
         /etc/fsaudit/fsaudit.yaml /lib/systemd/system/fsaudit-helper.socket \
         /lib/systemd/system/fsauditd.service /usr/share/dbus-1/system.d/org.fsaudit.Daemon1.conf \
         /usr/lib/sysusers.d/fsaudit.conf /usr/lib/tmpfiles.d/fsaudit.conf \
         /usr/share/fsaudit/alerts/fsaudit.rules.yml /usr/share/fsaudit/grafana/dashboards/fsaudit-fleet.json \
         /usr/share/fsaudit/grafana/provisioning/dashboards/fsaudit.yml \
         /usr/share/man/man8/fsauditd.8.gz /usr/share/man/man8/fsauditctl.8.gz /usr/share/man/man5/fsaudit.yaml.5.gz \
         /usr/share/man/man8/fsaudit-scrub-detach.8.gz \
         /usr/share/doc/fsaudit/copyright; do
  [ -e "$f" ] || fail "missing after install: $f"
done
dpkg-query -W -f='${Conffiles}\n' fsaudit | grep -q "/etc/fsaudit/fsaudit.yaml" || fail "config is not a conffile"
getent passwd fsaudit >/dev/null || fail "postinst did not create the system user"
[ -L /etc/systemd/system/multi-user.target.wants/fsauditd.service ] || fail "unit not enabled"
# Enabled, not started.
if pgrep -x fsauditd -a 2>/dev/null | grep -q "^[0-9]* /usr/sbin/fsauditd"; then fail "the package started fsauditd"; fi
/usr/sbin/fsauditd --check-config /etc/fsaudit/fsaudit.yaml || fail "installed config does not validate"
# The installed daemon finds its TLS module (PREFIX/lib/fsaudit beside PREFIX/sbin) and serves https.
tlsdir=$(mktemp -d)
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$tlsdir/key.pem" -out "$tlsdir/cert.pem" 2>/dev/null || fail "openssl req"
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf 'tls_server_config:\n  cert_file: cert.pem\n  key_file: key.pem\n' >"$tlsdir/web.yml"
printf 'listen: 127.0.0.1:%s\nstate_dir: %s/state\ndbus_address: none\nweb_config_file: %s/web.yml\ntargets: {discover: false}\nlatency: {enabled: false}\n' \
  "$port" "$tlsdir" "$tlsdir" >"$tlsdir/fsaudit.yaml"
/usr/sbin/fsauditd --config "$tlsdir/fsaudit.yaml" >"$tlsdir/log" 2>&1 &
tlspid=$!
code=000
for _ in $(seq 50); do
  code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 5 --cacert "$tlsdir/cert.pem" "https://127.0.0.1:$port/metrics" || true)
  [ "$code" = 200 ] && break
  sleep 0.2
done
kill "$tlspid"; wait "$tlspid" || true; tlspid=
[ "$code" = 200 ] || fail "the installed fsauditd does not serve TLS (got $code): $(cat "$tlsdir/log")"
rm -rf "$tlsdir"
/usr/bin/fsauditctl --help | grep -q "usage: fsauditctl" || fail "fsauditctl --help"
man -l /usr/share/man/man8/fsauditctl.8.gz 2>/dev/null | grep -q "EXIT STATUS" || fail "fsauditctl(8) does not render"
for unit in $(dpkg -L fsaudit | grep '^/lib/systemd/system/.*\.\(service\|socket\|timer\)$'); do
  out=$(systemd-analyze verify "$unit" 2>&1) || fail "systemd-analyze verify $unit: $out"
  [ -z "$out" ] || fail "systemd-analyze verify $unit reported: $out"
done
(cd /usr/share/fsaudit/alerts/tests && promtool test rules *.test.yml >/dev/null) || fail "installed alert tests"
echo "installed layout, config, units and alert tests: ok"

# Upgrade N -> N+1 as dh_installsystemd's scripts do it: the running units are try-restarted by the
# new postinst (nothing stopped is started), the old prerm does not stop them, a changed conffile stays.
echo "# changed by the operator" >>/etc/fsaudit/fsaudit.yaml
with_systemd_branch dpkg -i "$deb2" || fail "dpkg -i of revision 2 over revision 1"
[ "$(dpkg-query -W -f='${Version}' fsaudit)" = "$(dpkg-deb -f "$deb2" Version)" ] || fail "not upgraded to $(dpkg-deb -f "$deb2" Version)"
calls=$(cat "$shim/calls" 2>/dev/null || true)
echo "$calls" | sed 's/^/upgrade asked: /'
echo "$calls" | grep -q "^deb-systemd-invoke try-restart fsauditd.service " || fail "the upgrade did not try-restart fsauditd.service: $calls"
echo "$calls" | grep -q "^deb-systemd-invoke stop" && fail "the upgrade stopped a unit (prerm upgrade must not): $calls"
echo "$calls" | grep -q "^deb-systemd-invoke \(start\|restart\) " && fail "the upgrade starts units that may have been stopped: $calls"
grep -q "^# changed by the operator" /etc/fsaudit/fsaudit.yaml || fail "the upgrade replaced the changed config"
[ -L /etc/systemd/system/multi-user.target.wants/fsauditd.service ] || fail "unit no longer enabled after the upgrade"
rm -rf "$shim"; shim=
echo "upgrade restarts what ran, keeps the config: ok"

dpkg -r fsaudit || fail "dpkg -r"
[ -f /etc/fsaudit/fsaudit.yaml ] || fail "remove dropped the config"
[ ! -e /usr/sbin/fsauditd ] || fail "remove left the binary"
dpkg -P fsaudit || fail "dpkg -P"
installed=0
for f in /etc/fsaudit /var/lib/fsaudit /usr/sbin/fsauditd /usr/bin/fsauditctl /lib/systemd/system/fsauditd.service \
         /etc/systemd/system/multi-user.target.wants/fsauditd.service /usr/share/fsaudit /usr/share/doc/fsaudit \
         /usr/share/dbus-1/system.d/org.fsaudit.Daemon1.conf /usr/lib/fsaudit; do
  [ ! -e "$f" ] && [ ! -L "$f" ] || fail "left after purge: $f"
done
if dpkg-query -W -f='${Status}' fsaudit 2>/dev/null | grep -q "installed"; then fail "still known to dpkg after purge"; fi
echo "remove kept the config, purge left nothing: ok"
